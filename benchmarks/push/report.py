"""``bench push``'s files: ``results.json`` (the figures), ``results.md`` (the tables),
``asked.jsonl`` (what every prompt was served, for ``--reuse``) and ``push.png`` (held-out
silence against recall per kind of data, before and with the gate, and the trade-off)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

from benchmarks.push.asked import KINDS, save

__all__ = ["NO_PLOT", "markdown", "plot", "write_outputs"]

NO_PLOT = (
    "push.png not drawn: matplotlib is missing (pip install 'ralph-context[bench]'); "
    "results.json and results.md are written"
)


def _cell(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _row(name: str, f: dict[str, Any]) -> str:
    cells = [
        f"{f['answerable']} / {f['no_answer']}",
        _cell(f["recall"]),
        _cell(f["silence"]),
        _cell(f["precision"]),
        f"{f['items_answerable']:.2f} / {f['items_no_answer']:.2f}",
    ]
    return f"| {name} | " + " | ".join(cells) + " |"


HEADER = (
    "| | prompts answerable / not | recall (answer pushed) | silence (no-answer: nothing) "
    "| precision (pushed items relevant) | items pushed answerable / not |\n"
    "| --- | --- | --- | --- | --- | --- |"
)


def markdown(results: dict[str, Any]) -> str:
    """The held-out figures per kind beside the figures before the gate, the categories,
    the text tier, the constants, the trade-off and the machine's load."""
    lines = [
        "Push gate, held out (folds by project, conversation, question, task; fitted on "
        "people's prompts, the loop row graded with the same gate):",
        "",
        HEADER,
    ]
    for kind, f in results["held_out"].items():
        lines.append(_row(f"**{kind}**", f))
        lines.append(_row(f"{kind}, before the gate", results["before_gate"][kind]))
    lines += ["", "Held out, per category:", "", HEADER]
    for kind, cats in results["held_out_categories"].items():
        lines += [_row(f"{kind}: {name}", f) for name, f in cats.items()]
    lines += [
        "",
        "With the lexical weight fitted too (each fold's: "
        + "; ".join(_gate(g) for g in results["free_weight_fold_choices"])
        + "):",
        "",
        HEADER,
    ]
    lines += [_row(kind, f) for kind, f in results["held_out_free_weight"].items()]
    lines += ["", "Text tier (the model out; cosine taken away from the same items):", "", HEADER]
    lines += [_row(kind, f) for kind, f in results["held_out_text_tier"].items()]
    chosen, shipped = results["chosen"], results["shipped"]
    folds = "; ".join(_gate(g) for g in results["fold_choices"])
    lines += [
        "",
        f"Chosen on all: {_gate(chosen)}. Shipped (`retrieval.push_gate: auto`): "
        + (_gate(shipped) if shipped else "none for this model")
        + f". Each fold's choice: {folds}.",
    ]
    if results["trade_off"]:
        lines += [
            "",
            "Trade-off, held out: the most paraphrase answers pushed at a mean silence over the "
            "kinds' no-answer prompts:",
            "",
            "| target silence | mean silence | paraphrase recall | "
            + " | ".join(f"{kind} recall / silence" for kind in results["trade_off"][0]["kinds"])
            + " |",
            "| --- | --- | --- |" + " --- |" * len(results["trade_off"][0]["kinds"]),
        ]
        for row in results["trade_off"]:
            kinds = " | ".join(
                f"{_cell(f['recall'])} / {_cell(f['silence'])}" for f in row["kinds"].values()
            )
            lines.append(
                f"| {row['target_silence']:.1f} | {row['silence']:.3f} | "
                f"{_cell(row['paraphrase_recall'])} | {kinds} |"
            )
    machine = results.get("machine", {})
    lines += ["", f"Machine: {json.dumps(machine)}"]
    return "\n".join(lines) + "\n"


def _gate(gate: dict[str, float]) -> str:
    return (
        f"cosine + {gate['lexical_weight']:g}·lexical ≥ {gate['min_evidence']:g} "
        f"(text tier: lexical ≥ {gate['min_lexical']:g})"
    )


def plot(results: dict[str, Any], path: Path) -> None:
    """Per kind, silence against recall held out (filled) and before the gate (hollow), and
    the trade-off's paraphrase recall against the mean silence."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (kinds, trade) = plt.subplots(1, 2, figsize=(11, 4.5))
    for kind, f in results["held_out"].items():
        before = results["before_gate"][kind]
        colour = _colour(kind)
        kinds.scatter(f["silence"] or 0, f["recall"] or 0, color=colour, s=60, label=kind)
        kinds.scatter(
            before["silence"] or 0, before["recall"] or 0, facecolors="none", edgecolors=colour
        )
        kinds.annotate(
            "",
            (f["silence"] or 0, f["recall"] or 0),
            (before["silence"] or 0, before["recall"] or 0),
            arrowprops={"arrowstyle": "->", "color": colour, "alpha": 0.5},
        )
    kinds.axvline(0.9, color="grey", linestyle=":")
    kinds.axhline(0.9, color="grey", linestyle=":")
    kinds.set_xlabel("silence on no-answer prompts")
    kinds.set_ylabel("recall (answer pushed)")
    kinds.set_xlim(-0.05, 1.05)
    kinds.set_ylim(-0.05, 1.05)
    kinds.set_title("held out: gate (filled) vs before (hollow)")
    kinds.legend(loc="lower left")
    rows = results["trade_off"]
    if rows:
        for kind in rows[0]["kinds"]:
            trade.plot(
                [r["silence"] for r in rows],
                [r["kinds"][kind]["recall"] or 0 for r in rows],
                marker="o" if kind == "paraphrase" else ".",
                alpha=1.0 if kind == "paraphrase" else 0.6,
                color=_colour(kind),
                label=f"{kind} recall",
            )
        trade.axhline(0.9, color="grey", linestyle=":")
        trade.axvline(0.9, color="grey", linestyle=":")
        trade.legend()
    trade.set_xlabel("mean silence over the kinds' no-answer prompts")
    trade.set_ylabel("recall")
    trade.set_xlim(0.4, 1.05)
    trade.set_ylim(-0.05, 1.05)
    trade.set_title("held-out trade-off")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _colour(kind: str) -> str:
    """One colour per kind in both panels."""
    return f"C{KINDS.index(kind)}" if kind in KINDS else "C9"


def write_outputs(results: dict[str, Any], out: Path) -> list[Path]:
    """The files, the plot last (skipped, with a line on stderr, without matplotlib)."""
    out.mkdir(parents=True, exist_ok=True)
    figures = {key: value for key, value in results.items() if key != "asked"}
    paths = [out / "results.json", out / "results.md", out / "asked.jsonl"]
    paths[0].write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    paths[1].write_text(markdown(figures), encoding="utf-8")
    save(results.get("asked", []), paths[2])
    if importlib.util.find_spec("matplotlib") is None:
        print(NO_PLOT, file=sys.stderr)
        return paths
    paths.append(out / "push.png")
    plot(figures, paths[3])
    return paths

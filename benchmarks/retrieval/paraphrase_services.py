"""Paraphrase stores of two services: a Python web API and a Rust command-line tool."""

from __future__ import annotations

from benchmarks.retrieval.paraphrase_types import Store, parse_items, parse_queries

__all__ = ["LOGSIFT", "ORDERS_API"]

ORDERS_API = Store(
    project="orders-api",
    description="Python web API: FastAPI, async SQLAlchemy on PostgreSQL, Celery, a payment "
    "provider",
    items=parse_items(
        r"""
task-orders task 1: Task: build the orders API (FastAPI + PostgreSQL). Endpoints: POST /orders,
    GET /orders/{id}, GET /orders?customer_id=, POST /orders/{id}/cancel. Auth by JWT bearer
    tokens issued by the accounts service.
file-main file 1: app/main.py: creates the FastAPI app, mounts the routers from app/routes/,
    registers the lifespan handler that opens and closes the database engine.
file-session file 2 db: app/db/session.py: owns the async SQLAlchemy engine and the
    sessionmaker; get_session() is the dependency every route uses. pool_size=5,
    max_overflow=10, pool_pre_ping=True.
skill-alembic skill 2 db,migrations: When adding a column, write an Alembic revision with
    `alembic revision --autogenerate -m "..."` and read the generated file before committing:
    autogenerate misses server defaults and renamed columns.
out-pytest-first output 3: `pytest -q`: 14 passed, 2 failed
    (tests/test_orders.py::test_cancel_twice, tests/test_orders.py::test_list_paginates) in 3.41s
err-greenlet error 3 db: `sqlalchemy.exc.MissingGreenlet: greenlet_spawn has not been called;
    can't call await_only() here` in app/routes/orders.py line 58 when serialising order.items.
    Fixed by loading the relationship eagerly with selectinload(Order.items) in the query
    instead of touching the lazy attribute after the session closed.
it-cancel iteration 3: Iteration 3: cancel endpoint done; cancelling twice now returns 409
    instead of 500. Pagination test still red.
err-page-size error 4: `AssertionError: assert 20 == 25` in
    tests/test_orders.py::test_list_paginates: the default page size was hard-coded to 20 in
    app/routes/orders.py while the test expects settings.page_size (25). Fixed by reading the
    limit from settings.
dec-cursor iteration 4: Decision: cursor pagination (an opaque base64 cursor of created_at,id)
    instead of offset/limit, because offset scans get slow past ~100k orders and clients asked
    for stable pages while new orders arrive.
file-settings file 5: app/settings.py: pydantic BaseSettings; reads ORDERS_ env vars and .env.
    DATABASE_URL, JWT_PUBLIC_KEY, JWT_AUDIENCE, PAYMENT_BASE_URL, PAGE_SIZE=25, REQUEST_TIMEOUT=5.
err-audience error 5 auth: `jwt.exceptions.InvalidAudienceError: Audience doesn't match` on every
    authenticated request in staging. The accounts service issues tokens with aud='orders-api'
    but we verified against 'orders'. Fixed in app/auth.py by passing
    audience=settings.jwt_audience, defaulting to 'orders-api'.
skill-auth-fixture skill 6 auth,tests: When a test needs an authenticated client, use the
    `auth_client` fixture from tests/conftest.py; it signs a token with the test private key in
    tests/keys/. Don't mock decode_token: the audience bug slipped through that way once.
file-payments file 6 payments: app/payments/client.py: thin wrapper around requests for the
    PayBridge API. charge(order) posts to /v1/charges with an idempotency key = order id;
    retries 3 times on 502/503 with backoff.
err-read-timeout error 7 payments: `requests.exceptions.ReadTimeout:
    HTTPSConnectionPool(host='api.paybridge.io', port=443): Read timed out. (read timeout=5)` in
    app/payments/client.py line 41 during the load test. Fixed by raising the read timeout to
    15 s for charges only and keeping the connect timeout at 3 s; PayBridge's p99 is 9 s.
out-locust output 7: locust, 50 users, 5 min: POST /orders p50 180 ms, p95 2.4 s, p99 9.8 s;
    12 failures (ReadTimeout from PayBridge). GET /orders/{id} p95 35 ms.
skill-call-outside-tx skill 8 db,payments: Before calling an external service inside a request
    handler, make the call outside the database transaction; holding a transaction open during
    a 9 s payment call exhausted the pool in the load test.
err-pool-exhausted error 8 db: `sqlalchemy.exc.TimeoutError: QueuePool limit of size 5 overflow
    10 reached, connection timed out, timeout 30.00` under load. Each POST /orders held its
    session while waiting for PayBridge. Fixed by committing the order as PENDING, releasing the
    session, then charging.
it-two-step iteration 9: Iteration 9: orders are now created in two steps (PENDING, then PAID
    or FAILED); the PayBridge webhook updates the status. Load test: no pool timeouts, POST p99
    10.1 s (all of it PayBridge).
file-webhooks file 9 payments: app/routes/webhooks.py: POST /webhooks/paybridge; verifies the
    HMAC-SHA256 signature header X-PayBridge-Signature with PAYMENT_WEBHOOK_SECRET, then updates
    the order status. Must answer 2xx within 3 s or PayBridge retries.
err-signature error 10 payments: Webhook signature check failed for every event in staging: we
    computed the HMAC over the parsed and re-serialised JSON body, PayBridge signs the raw bytes.
    Fixed by reading `await request.body()` before parsing.
task-email task 10: Task: send an order confirmation email when an order becomes PAID. Use the
    existing Celery worker (Redis broker) rather than sending inline.
file-email-task file 11: app/tasks/email.py: Celery task send_confirmation(order_id); renders
    templates/confirmation.html with Jinja2 and sends it through the SMTP relay in settings.
    Retries 5 times, countdown 60 s.
err-broker error 11: `kombu.exceptions.OperationalError: Error 111 connecting to
    localhost:6379. Connection refused.` when the API enqueued the email under docker compose.
    The broker URL defaulted to localhost; in compose the Redis host is `redis`. Fixed by
    setting CELERY_BROKER_URL=redis://redis:6379/0 in docker-compose.yml.
out-compose output 12: `docker compose up`: api-1 | INFO: Uvicorn running on
    http://0.0.0.0:8000 / worker-1 | celery@a1b2 ready. / redis-1 | Ready to accept connections
    tcp
skill-celery-ids skill 12: When a Celery task touches the database, open a fresh session inside
    the task (SessionLocal()); never pass ORM objects as task arguments: they are pickled
    detached and their lazy attributes fail in the worker. Pass ids.
err-duplicate-emails error 13: Duplicate confirmation emails: the webhook can arrive twice and
    each delivery enqueued send_confirmation. Fixed by updating the order with
    `UPDATE ... WHERE status='PENDING' RETURNING id` and enqueueing only when a row came back.
it-emails-once iteration 13: Iteration 13: emails sent once per order; the idempotency relies
    on the conditional UPDATE, not on a lock.
file-requirements file 14: requirements.txt: fastapi==0.111.0, uvicorn[standard]==0.29.0,
    sqlalchemy[asyncio]==2.0.30, asyncpg==0.29.0, alembic==1.13.1, pydantic-settings==2.2.1,
    requests==2.31.0, celery[redis]==5.4.0, pyjwt[crypto]==2.8.0, jinja2==3.1.4
out-audit output 14: `pip-audit -r requirements.txt`: Found 1 known vulnerability in 1 package:
    jinja2 3.1.3 GHSA-h75v-3vvj-5mfj (fixed in 3.1.4). Bumped.
err-enum error 15 db,migrations: `alembic upgrade head` failed in CI:
    `asyncpg.exceptions.DuplicateObjectError: type "order_status" already exists`. Two revisions
    both created the enum. Fixed by making revision 7c1e2a use
    `postgresql.ENUM(..., create_type=False)`.
skill-one-test skill 15 tests: To run one test file fast:
    `pytest tests/test_webhooks.py -q -p no:cacheprovider --no-cov`; the coverage plugin adds
    ~6 s to every run.
task-rate-limit task 16: Task: rate-limit POST /orders to 30 requests a minute per customer;
    answer 429 with Retry-After beyond that.
dec-rate-limit iteration 16: Decision: rate limit in Redis with a fixed-window counter (INCR +
    EXPIRE) keyed by customer id, not slowapi: slowapi keys by IP and our clients sit behind
    one NAT.
err-window-burst error 17: Rate limiter let 60 requests through in a minute at a window
    boundary (a fixed window allows 2x bursts). Accepted: product said bursts of 2x are fine;
    documented in docs/rate-limits.md.
out-mypy output 18: `mypy app/`: Success: no issues found in 31 source files. `ruff check`:
    All checks passed!
file-conftest file 18 tests: tests/conftest.py: spins up a PostgreSQL 16 container with
    testcontainers per session, runs alembic upgrade head once, wraps each test in a SAVEPOINT
    that is rolled back.
it-ci-green iteration 19: Iteration 19: CI green; 112 tests in 48 s (95 s before the
    savepoint-per-test change).
err-loop-closed error 19 tests: `RuntimeError: Event loop is closed` at the end of the test
    session, from asyncpg connections. Fixed by disposing of the engine in a session-scoped
    fixture finaliser (`await engine.dispose()`).
task-export task 20: Task: export a daily CSV of orders for finance (S3 bucket finance-exports,
    orders/YYYY-MM-DD.csv) from a Celery beat schedule at 02:00 UTC.
"""
    ),
    queries=parse_queries(
        r"""
err-greenlet: Why did reading a purchase's products crash once the database handle was gone, and
    what solved it?
err-read-timeout: The billing vendor answered too slowly during the stress run. Which limit got
    bumped?
err-pool-exhausted: We ran out of database handles when lots of people bought at once. What was
    behind it?
skill-call-outside-tx: What's our rule about contacting third-party providers from a route
    before committing?
dec-cursor: Why don't we use skip/take numbering when listing results?
err-audience: Signed-in calls were all refused on the pre-prod environment because the
    credential's intended-recipient field mismatched. What changed?
skill-auth-fixture: How do I write a spec that acts as someone logged in?
file-payments: Where's the code that talks to the card processor over HTTP?
file-webhooks: How do we check that the vendor's callbacks are genuine?
err-signature: Why were the billing company's incoming notifications all rejected as forged on
    pre-prod?
task-email file-email-task: What message should a buyer get after a successful purchase?
err-broker: Background jobs couldn't be handed off when everything ran in containers on a laptop.
    What was misconfigured?
skill-celery-ids: Can I hand a model instance straight to a background job?
err-duplicate-emails: Buyers were getting two receipts for one purchase. How did we stop that?
file-requirements: Where are the pinned third-party library versions listed?
out-audit: Did the dependency security scan turn up anything?
err-enum: Schema scripts blew up in the build pipeline because a pair of them each declared
    the same custom kind. How did that get resolved?
skill-one-test: What's the quickest way to execute a single spec module, skipping the slow
    measurement extension?
dec-rate-limit: Why is throttling tracked per buyer instead of per network address?
err-window-burst: Double the permitted traffic got past the throttle at the turn of each clock
    period. Is that a bug we should chase?
file-conftest: How is the scratch database for the spec suite provisioned and reset between
    cases?
err-loop-closed: Why did the whole spec suite finish with a complaint that the coroutine
    scheduler was already shut?
out-locust: What latency numbers did we measure when simulating many concurrent buyers?
task-export: What's the plan for the nightly spreadsheet the accountants want?
file-settings: Which module holds the configuration knobs, like the DSN and the per-call
    deadline?
-: How do we version the public API: is a /v2 prefix planned for the orders routes?
-: How are refunds processed when a customer sends an order back?
-: Which index did we add to the orders table to speed up the customer lookup?
-: What's the CORS setup for the browser front end calling the API?
-: How do we rotate the JWT signing keys?
"""
    ),
)

LOGSIFT = Store(
    project="logsift",
    description="Rust command-line tool that filters and summarises JSON-lines logs",
    items=parse_items(
        r"""
task-logsift task 1: Task: write `logsift`, a Rust CLI that reads JSON-lines log files (or
    stdin), filters by level, time range and field=value, and prints the matching lines or a
    summary table (counts per level, per service).
file-main file 1: src/main.rs: parses arguments with clap (derive), builds a Filter from them
    and hands stdin or the files to reader::run. Exit code 1 when nothing matched, 2 on bad input
    (like grep).
dec-clap iteration 1: Decision: clap 4 with the derive API rather than argh or hand-rolled
    parsing: we want shell completions (clap_complete) and a `--help` that lists value enums.
file-filter file 2: src/filter.rs: Filter { level: Option<Level>, since/until:
    Option<OffsetDateTime>, fields: Vec<(String, String)> }; matches(&Value) -> bool. Levels
    compare by severity, so --level warn keeps warn, error and fatal.
err-borrow error 2: error[E0502]: cannot borrow `self.buf` as mutable because it is also
    borrowed as immutable, src/reader.rs:57. The parsed Value borrowed from the line buffer while
    the loop refilled it. Fixed by parsing into an owned serde_json::Value (from_slice) before
    clearing the buffer.
out-test-first output 3: cargo test: running 18 tests ...
    test filter::tests::level_orders_by_severity ... ok ... test result: FAILED. 17 passed;
    1 failed (reader::tests::crlf_lines)
err-crlf error 3: reader::tests::crlf_lines failed: lines from Windows-produced logs end in \r\n
    and serde_json rejects the trailing \r (`trailing characters at line 1 column 88`). Fixed by
    trimming `\r` before parsing in reader::next_record.
skill-fixtures skill 4 tests: When a test needs a sample log, put it in tests/fixtures/ and load
    it with include_str!; don't build JSON strings by hand in the test: escaping mistakes hid a
    bug once.
err-broken-pipe error 4: thread 'main' panicked at 'failed printing to stdout: Broken pipe (os
    error 32)' when piping into `head -n 5`. Fixed by writing through a locked BufWriter and
    treating io::ErrorKind::BrokenPipe as a clean exit (code 0) in output::emit.
it-filtering iteration 5: Iteration 5: filtering by level, field and time works on files and
    stdin; summary mode not started. Broken pipe handled.
file-summary file 5: src/summary.rs: counts records per level and per `service` field in a
    HashMap<(String, Level), u64>, prints a table sorted by count with comfy-table.
out-hyperfine-1 output 6: hyperfine './target/release/logsift --level error big.jsonl':
    Time (mean ± σ): 4.812 s ± 0.061 s on a 2.1 GB file (1 thread);
    `jq 'select(.level=="error")'` takes 38 s.
dec-rayon iteration 6: Decision: parallelise with rayon over chunks of a memory-mapped file
    (memmap2), splitting at newline boundaries; stdin stays single-threaded because it cannot be
    mapped.
err-chunk-split error 7: Records were split in half at chunk edges: chunk boundaries were
    computed at fixed byte offsets and only the first chunk searched for '\n'. Fixed in
    src/chunks.rs by moving every boundary forward to just past the next newline.
out-hyperfine-2 output 7: hyperfine after rayon (8 threads): 0.71 s ± 0.02 s on the same 2.1 GB
    file, 6.8x faster. Peak RSS 12 MB (the map is not resident until touched).
skill-flamegraph skill 8 perf: To profile a release build, set `[profile.release] debug = true`
    temporarily and run `cargo flamegraph --bin logsift -- --level error big.jsonl`; remove
    debug before tagging, it triples the binary size.
err-parse-hot error 8 perf: flamegraph showed 40% of time in `serde_json::from_slice` building
    full Values for lines the level filter then dropped. Fixed by a pre-check: memchr for the
    level string before parsing; lines without it are skipped unparsed.
file-time file 9: src/time.rs: parses `--since`/`--until` as RFC 3339 or relative (`15m`, `2h`,
    `3d`) with the time crate; relative values are computed from now in UTC.
err-naive-tz error 9: `--since 2h` returned nothing for logs written in local time without an
    offset: timestamps like `2024-05-02 14:03:11` were parsed as UTC. Fixed by a `--tz` flag
    (default: the system's local offset) applied to naive timestamps.
task-release task 10: Task: release binaries for Linux (x86_64 and aarch64, static musl),
    macOS (universal) and Windows from GitHub Actions on every tag v*.
file-release-wf file 10 ci: .github/workflows/release.yml: matrix over targets; uses cross for
    aarch64-unknown-linux-musl, lipo to merge the two macOS builds, uploads archives and
    SHA256SUMS to the GitHub release.
err-arm-link error 11 ci: cross build for aarch64-unknown-linux-musl failed: `error: linking
    with cc failed ... undefined reference to __aarch64_ldadd4_acq_rel`. Caused by an old cross
    image; fixed by pinning cross to 0.2.5 and setting `[target.aarch64-unknown-linux-musl]
    image` in Cross.toml.
out-release-sizes output 11: release v0.3.0: logsift-x86_64-unknown-linux-musl.tar.gz 1.9 MB,
    logsift-aarch64-unknown-linux-musl.tar.gz 1.7 MB, logsift-universal-apple-darwin.tar.gz
    3.6 MB, logsift-x86_64-pc-windows-msvc.zip 1.6 MB
skill-clippy skill 12 ci: Run `cargo clippy --all-targets -- -D warnings` before every commit;
    CI fails on any lint and the release job depends on it.
err-clippy error 12 ci: clippy: `this loop could be written as a for loop`
    (clippy::while_let_on_iterator) and `redundant clone` in src/summary.rs; both fixed, CI was
    red for 20 min because of them.
it-released iteration 13: Iteration 13: v0.3.0 released on four platforms; the README documents
    `cargo install` and the archives.
err-line-cap error 14: User report: a log line with a 300 KB stack trace field made logsift
    print 'line too long' and stop. The reader used a 256 KB fixed buffer. Fixed by growing the
    buffer (read_until) up to --max-line (default 16 MB); longer lines are skipped with a
    warning.
file-output file 14: src/output.rs: emit() writes matching lines unchanged (raw bytes, no
    re-serialisation) so field order and number formatting survive; `--color` highlights the
    level only when stdout is a terminal (is-terminal crate).
task-logfmt task 15: Task: add `--format logfmt` input: key=value pairs, quoted values with
    spaces, as written by Go's logrus and Heroku.
err-escape error 16: The logfmt parser treated `msg="a \"quoted\" word"` as ending at the
    escaped quote. Fixed by handling backslash escapes in the tokenizer (src/logfmt.rs, a state
    machine with an Escape state).
skill-fuzz skill 16: Fuzz new parsers with cargo-fuzz
    (`cargo +nightly fuzz run logfmt -- -max_total_time=300`) before a release; it found the
    escaped-quote bug's sibling (a lone trailing backslash panicked).
out-fuzz output 17: cargo fuzz: #1048576 DONE cov: 812 ft: 2240 corp: 301/14Kb exec/s: 3495;
    no crashes after the trailing-backslash fix.
dec-msrv iteration 17: Decision: keep the MSRV at 1.74 (Debian bookworm's rustc is older, but
    users there install through rustup); `rust-version = "1.74"` in Cargo.toml and a CI job on
    that toolchain.
err-lazylock error 18 ci: MSRV job failed: `error[E0658]: use of unstable library feature
    'lazy_cell'`: std::sync::LazyLock is stable only since 1.80. Replaced with
    once_cell::sync::Lazy.
file-cargo file 18: Cargo.toml: clap 4.5 (derive), serde_json 1, rayon 1.10, memmap2 0.9,
    memchr 2, time 0.3 (parsing, macros), comfy-table 7, is-terminal 0.4, once_cell 1;
    dev-dependencies assert_cmd, predicates, tempfile.
skill-assert-cmd skill 19 tests: End-to-end tests use assert_cmd:
    `Command::cargo_bin("logsift")` with `.write_stdin(...)` and predicates on stdout; they catch
    exit-code regressions the unit tests miss.
it-logfmt iteration 20: Iteration 20: logfmt input shipped in v0.4.0; fuzzed 5 min per parser;
    the MSRV 1.74 job is green.
err-ansi error 20: Windows: `--color` printed raw escape codes in cmd.exe. Fixed by enabling
    virtual terminal processing with the `enable-ansi-support` crate at start-up, on Windows
    only.
"""  # noqa: RUF001 (hyperfine prints a Greek sigma)
    ),
    queries=parse_queries(
        r"""
err-borrow: The compiler rejected keeping a reference into scratch memory that gets overwritten
    on each pass. How did we get around it?
err-crlf: Why couldn't we decode entries coming from Microsoft machines?
err-broken-pipe: The tool crashed when whatever consumed its results quit early. How is that
    dealt with now?
skill-fixtures: Where do example inputs for the specs go, rather than writing them inline?
file-summary: Which part tallies entries by severity and by emitting component?
out-hyperfine-1: How quick was the first single-core version on the multi-gigabyte input, next
    to the well-known command-line alternative?
dec-rayon: What approach spreads the work across several cores, and why can't piped input use
    it?
err-chunk-split: Some entries came out cut in two when processing in parallel. What was wrong?
out-hyperfine-2: What speedup did we get once all cores were busy?
skill-flamegraph: How do I find the hot spots of the optimised executable?
err-parse-hot: Most of the runtime went into decoding entries that get thrown away anyway. What
    shortcut did we add?
err-naive-tz: A "past two hours" window came back empty for entries lacking a zone suffix. Why?
file-release-wf: Where's the automation that packages executables for every operating system when we
    cut a version?
err-arm-link: Producing the ARM64 executable broke with an unresolved atomic symbol. How was
    it resolved?
out-release-sizes: How big are the shipped downloads per platform?
skill-clippy: Which static analysis must be clean on my machine before I push?
err-line-cap: Someone had a record with an enormous backtrace that halted processing. How do we
    cope with that now?
file-output: Are selected entries reproduced verbatim, or re-encoded?
err-escape: Strings with nested inner delimiters got truncated by the new key-pair reader. How
    was it sorted?
skill-fuzz: How do we throw random garbage at an input decoder ahead of shipping?
dec-msrv: What's the minimum compiler we promise to stay compatible with?
err-lazylock: The oldest-compiler check broke on a built-in global initialiser that's too
    recent. What did we swap in?
skill-assert-cmd: How do we drive the compiled executable as a black box from the suite?
err-ansi: Highlighting appeared as junk sequences in the legacy Microsoft shell. How was it
    sorted?
file-time: Which module turns human durations or ISO instants into search bounds?
-: Does logsift read gzip-compressed log files directly?
-: How do we publish the crate to crates.io?
-: Is there a config file for default filters, and where does it live?
-: How does logsift follow a file that gets rotated while tailing it (tail -f mode)?
-: What's the plan for a Homebrew formula?
"""
    ),
)

"""Paraphrase stores of two batch jobs: a data pipeline and a model training job."""

from __future__ import annotations

from benchmarks.retrieval.paraphrase_types import Store, parse_items, parse_queries

__all__ = ["DEFECT_CLASSIFIER", "SALES_ETL"]

SALES_ETL = Store(
    project="sales-etl",
    description="Data pipeline: Airflow, pyarrow and pandas, Snowflake, dbt",
    items=parse_items(
        r"""
task-pipeline task 1: Task: nightly pipeline that pulls the retailer's sales CSVs from their
    SFTP drop, cleans them, loads them into Snowflake (RAW.SALES) and builds the reporting
    models with dbt.
file-dag file 1 airflow: dags/sales_nightly.py: Airflow DAG `sales_nightly`, schedule
    `0 3 * * *` (UTC), tasks fetch_sftp >> validate >> load_raw >> dbt_run >> dbt_test;
    catchup=False, max_active_runs=1.
file-fetch file 2: etl/fetch.py: downloads new files from sftp.retailer.example:/outbound/sales/
    with paramiko and keeps a manifest of processed file names in S3
    (s3://acme-etl/state/manifest.json) so reruns skip them.
err-banner error 2 sftp: `paramiko.ssh_exception.SSHException: Error reading SSH protocol
    banner` on the first connect from the Airflow worker. The vendor's server is slow to answer;
    fixed with banner_timeout=60 on connect().
dec-arrow iteration 3: Decision: read CSVs with pyarrow.csv into Arrow tables and convert to
    pandas only for the cleaning steps that need it; pandas alone took 9 GB of memory on the
    3 GB December file.
err-oom error 3: `MemoryError`, then the worker killed (exit -9) in the validate task on the
    2023-12 file. Fixed by streaming with pyarrow.csv.open_csv in 64 MB blocks and writing
    Parquet part files instead of one big DataFrame.
file-clean file 4: etl/clean.py: normalises column names to snake_case, parses `sale_ts` (the
    vendor writes local store time, no offset), casts amounts to Decimal(12,2), drops exact
    duplicate rows, maps store codes via data/stores.csv.
err-decimal-comma error 4: Amounts like `1.234,56` (German-locale rows from the Austrian stores)
    were parsed as NaN. Fixed in clean.py by detecting the decimal comma per store (stores.csv
    has a locale column) and parsing accordingly.
skill-raw-bytes skill 5: When a vendor file looks wrong, check the raw bytes first
    (`head -c 400 file | xxd`): the BOM, the delimiter and the line endings explain most
    parsing failures.
err-bom error 5: First column came out as `\ufeffstore_id`, so the join on store_id found
    nothing: the files start with a UTF-8 BOM. Fixed by reading with encoding='utf-8-sig'.
out-dbt-run output 6: dbt run: Completed successfully. Done. PASS=14 WARN=0 ERROR=0 SKIP=0
    TOTAL=14 (4m12s)
file-fct-daily file 6 dbt: models/marts/fct_daily_sales.sql: one row per store per day;
    incremental on sale_date with a 3-day lookback so late files correct recent days;
    unique_key = ['store_id', 'sale_date'].
err-unique-merge error 7 dbt: dbt test failed: `unique_fct_daily_sales_store_id__sale_date` got
    212 results. The lookback re-inserted days instead of merging because the model used
    incremental_strategy='append'. Fixed by switching to 'merge'.
it-backfill iteration 7: Iteration 7: the full pipeline ran end to end on the 2023 backfill; dbt
    tests green after the merge fix; 41M rows in RAW.SALES.
err-dst error 8: Daily totals around the end of March were off by one hour's sales: sale_ts is
    Europe/Vienna local time and we localised it as UTC. Fixed by
    tz_localize('Europe/Vienna', ambiguous='NaT', nonexistent='shift_forward') and converting to
    UTC; ambiguous rows are logged.
skill-utc skill 8: Store timestamps in UTC in Snowflake (TIMESTAMP_TZ converted to UTC) and
    derive the business date in the store's own zone in dbt (convert_timezone), never in Python.
file-stg-sales file 9 dbt: models/staging/stg_sales.sql: casts the RAW.SALES columns, filters
    out test stores (store_id like 'T%'), computes
    sale_date = convert_timezone('Europe/Vienna', sale_ts)::date.
err-column-count error 9: Snowflake load failed: `Number of columns in file (19) does not match
    that of the corresponding table (18)`. The vendor added a `promo_code` column without
    notice. Fixed by COPY with MATCH_BY_COLUMN_NAME=CASE_INSENSITIVE and adding the column to
    RAW.SALES.
task-alerting task 10: Task: alert the data team in Slack when the nightly load is late or the
    row count drops more than 30% against the 7-day average.
dec-schema-policy iteration 10: Decision: schema changes from the vendor are accepted
    automatically only when they add columns; a removed or retyped column fails validate and
    pages the on-call, because silent NULLs broke the finance report once.
file-validate file 11: etl/validate.py: Great Expectations suite `sales_raw`: expect the columns
    to exist, amount between -10000 and 100000, store_id in the store list, sale_ts not null;
    failures stop the DAG before load_raw.
err-refund-bound error 11: Great Expectations: `expect_column_values_to_be_between` on amount
    failed with 37 rows of -12500: bulk refunds from a closed store. The business confirmed they
    are real; the lower bound is now -50000 for refund rows only.
out-validate output 12: Airflow task log, validate: Validation succeeded: 11/11 expectations met
    on 412,388 rows (sales_2024-03-14.csv)
skill-backfill skill 12 airflow: To rerun one day without touching the others:
    `airflow dags backfill sales_nightly -s 2024-03-14 -e 2024-03-14 --reset-dagruns`, then
    `dbt run --select fct_daily_sales --vars '{day: 2024-03-14}'`.
err-alert-order error 13: The Slack alert fired every night with 'row count dropped 100%': the
    check ran before load_raw finished because it was a separate DAG on a fixed schedule. Fixed
    by making it a task downstream of dbt_test.
it-alerting iteration 13: Iteration 13: alerting in place (Slack #data-alerts) for lateness and
    volume; two weeks without a false alarm.
file-load file 14: etl/load.py: PUTs the Parquet part files to the internal stage
    @raw.sales_stage and runs COPY INTO RAW.SALES ... FILE_FORMAT=(TYPE=PARQUET)
    MATCH_BY_COLUMN_NAME=CASE_INSENSITIVE PURGE=TRUE.
err-double-load error 14: Rows loaded twice after a retried load_raw: COPY skips files it has
    loaded, but the retry re-uploaded them under new names. Fixed by naming part files after the
    source file's hash so the load history recognises them.
out-query-profile output 15: Snowflake query profile of the finance dashboard query: 38 s, 92%
    in TableScan of FCT_DAILY_SALES, partitions scanned 4,120 of 4,122.
dec-cluster iteration 15: Decision: cluster FCT_DAILY_SALES by (sale_date, store_id); the
    dashboard always filters a date range. Pruning now scans 60 of 4,122 partitions; the query
    takes 2.1 s.
task-returns task 16: Task: add the returns feed (returns_YYYYMMDD.csv, same SFTP) and a net
    sales model that subtracts returns by original sale date.
err-orig-key error 17: `KeyError: 'orig_sale_id'` in clean.py for returns files before 2024-02:
    the column was called `original_receipt` then. Fixed with a rename map keyed by file date.
file-net-sales file 17 dbt: models/marts/fct_net_sales.sql: joins fct_daily_sales with returns
    aggregated by original sale date and store; net_amount = gross - returns; returns without a
    matching sale go to a separate model for review.
skill-grain-tests skill 18 dbt: Every new dbt model gets at least `unique` and `not_null` tests
    on its grain in schema.yml; the duplicate-day bug would have been caught a week earlier.
out-pytest output 18: pytest tests/etl: 46 passed in 12.8s; coverage of etl/ 88%
err-module-missing error 19 airflow: The Airflow scheduler showed the DAG as broken:
    `ModuleNotFoundError: No module named 'etl'` after the worker image update; PYTHONPATH no
    longer included /opt/airflow/repo. Fixed by installing the package into the image
    (`pip install -e .`).
it-returns iteration 20: Iteration 20: returns feed live; the net sales model reconciles with
    finance's numbers within 0.1% for Jan-Mar 2024.
skill-retention skill 20: Keep the vendor's original files for 90 days (S3 lifecycle rule on
    s3://acme-etl/raw/); every past incident needed a look at the exact file we received.
"""
    ),
    queries=parse_queries(
        r"""
err-banner: Logging in to the retailer's drop box hung at the greeting stage. Which knob helped?
dec-arrow: Why don't we pull the big spreadsheets straight into data frames?
err-oom: The checking step died on the holiday-season month's input. How did we keep RAM down?
file-clean: Which step tidies headings, converts money to fixed-point numbers and de-dupes?
err-decimal-comma: Prices from shops using a continental number style turned into missing
    values. Why?
skill-raw-bytes: A supplier drop is garbled on import. What should I inspect before anything
    else?
err-bom: The shop identifier header carried a hidden leading character, so matching failed.
    What was it?
out-dbt-run: How did the SQL transformation layer fare when we executed it?
file-fct-daily: Which aggregate holds each shop's nightly takings, and how far back does it get
    recomputed?
err-unique-merge: The grain check found a shop listed twice for a single calendar entry after
    reprocessing. What setting was wrong?
err-dst: Revenue near the spring clock change landed sixty minutes out of place. What went wrong?
skill-utc: In which layer should the shop-local calendar day be computed?
err-column-count: The warehouse import broke when the supplier silently introduced an extra
    field. How did we adapt?
task-alerting: What notification rules were asked for when the overnight job is slow or
    volumes fall?
dec-schema-policy: Which supplier layout alterations go through unattended, and which wake
    somebody up?
file-validate: Where do we declare sanity rules for incoming rows, and what happens when one is
    violated?
err-refund-bound: Big negative figures from a shuttered shop tripped the range rule. Legit or
    bad data?
skill-backfill: How do I reprocess a single past date and leave everything else alone?
err-alert-order: The chat warning insisted that volume fell to zero each evening. Why?
err-double-load: After a second attempt of the warehouse import, some data appeared doubled. How
    is that prevented now?
dec-cluster: How did the accountants' report go from tens of seconds to about two?
err-orig-key: Older refund feeds named the link to the purchase differently. How do we cope?
skill-grain-tests: What baseline assertions must accompany each freshly added transformation?
err-module-missing: After rebuilding the containers, the orchestrator couldn't find our own
    code. How was that resolved?
skill-retention: How long are untouched inbound deliveries retained?
-: Which dbt model computes customer lifetime value?
-: How do we mask personal data (emails, phone numbers) before loading into Snowflake?
-: What's the SLA agreed with finance for the nightly DAG to finish?
-: How do we convert currencies for the Swiss stores?
-: Is there a separate Snowflake warehouse for testing dbt changes before they reach prod?
"""
    ),
)

DEFECT_CLASSIFIER = Store(
    project="defect-classifier",
    description="ML training job: PyTorch image classifier fine-tuned on defect images, "
    "exported to ONNX",
    items=parse_items(
        r"""
task-classifier task 1: Task: fine-tune a classifier for surface defects on steel sheets
    (6 classes: crack, inclusion, patches, pitted, rolled-in scale, scratches) from 18k labelled
    images; target macro-F1 >= 0.90 on the held-out line-3 images.
file-train file 1: train.py: entry point; reads configs/*.yaml with OmegaConf, builds the model,
    data and optimizer, runs the epoch loop, logs to Weights & Biases, saves checkpoints to
    runs/<name>/ckpt/.
dec-convnext iteration 1: Decision: start from timm's convnext_tiny pretrained on ImageNet-22k
    rather than a ViT: 224 px crops of 200x200 sensor tiles, little data, and a run trains in
    under an hour on one A10.
file-dataset file 2 data: data/dataset.py: DefectDataset reads labels.csv (path, label, line),
    loads grayscale PNGs with PIL and converts them to 3 channels; transforms from albumentations
    (flip, rotate 90, brightness/contrast, no colour jitter).
err-collate-size error 2 data: `RuntimeError: stack expects each tensor to be equal size, but
    got [3, 224, 224] at entry 0 and [3, 200, 224] at entry 5` in the DataLoader collate. Some
    tiles are 200x180; fixed with PadIfNeeded before the crop in the train and eval transforms.
out-epoch-1 output 3: epoch 1/30 train_loss 1.12 val_loss 0.84 val_acc 0.71 macro_f1 0.62
    lr 2.0e-4 (412 s)
err-nan-amp error 3: Training loss became NaN around step 2,300 with AMP (fp16). The GradScaler
    was there but scaler.unscale_ was missing before clip_grad_norm_, so clipping saw scaled
    gradients. Fixed by unscaling first; moved to bf16 on the A100s later.
skill-unscale skill 4: With mixed precision, call scaler.unscale_(optimizer) before clipping
    gradients, and log the scaler's scale: a scale collapsing to tiny values is the early sign of
    overflow.
err-cuda-oom error 4 gpu: `CUDA out of memory. Tried to allocate 1.50 GiB (GPU 0; 22.19 GiB
    total capacity; 19.8 GiB already allocated)` with batch 128 at 384 px. Fixed with batch 64
    and gradient accumulation 2 (same effective batch).
it-baseline iteration 5: Iteration 5: baseline convnext_tiny at 224 px: macro-F1 0.84 on line 3;
    worst class 'crack' with F1 0.61 (confused with scratches).
out-class-report output 5: classification report (val, line 3): crack p=0.72 r=0.53 f1=0.61
    n=212; inclusion 0.88/0.91; patches 0.95/0.96; pitted 0.86/0.82; rolled-in scale 0.90/0.93;
    scratches 0.79/0.88
dec-class-weights iteration 6: Decision: class-weighted cross-entropy (weights proportional to
    1/sqrt(frequency)) rather than oversampling with WeightedRandomSampler: oversampling overfit
    the 212 cracks; weights alone took crack F1 from 0.61 to 0.70 without hurting other classes.
file-base-config file 6: configs/base.yaml: model convnext_tiny, img_size 288, batch 64,
    accum 2, lr 2e-4, weight_decay 0.05, epochs 30, warmup 2 epochs then cosine,
    label_smoothing 0.1, bf16, seed 17.
err-ddp-hang error 7 gpu: DDP on 4 GPUs hung at the end of the first epoch with no error. One
    rank's validation loop ran a different number of batches (DistributedSampler padding with
    drop_last=False plus a rank-0-only eval). Fixed by evaluating on all ranks and all_reduce-ing
    the metrics.
skill-ddp-debug skill 7 gpu: When DDP hangs, rerun with
    `TORCH_DISTRIBUTED_DEBUG=DETAIL NCCL_DEBUG=INFO` and check that every rank calls the same
    collectives in the same order; a rank-0-only branch with a barrier or all_reduce inside is
    the usual cause.
out-torchrun output 8: torchrun --nproc_per_node 4 train.py: epoch time 96 s (single GPU
    380 s), GPU util 93-97%, dataloader wait 2%
err-shm error 8 data: `RuntimeError: DataLoader worker (pid 2817) is killed by signal: Bus
    error.` inside Docker. /dev/shm is 64 MB by default; fixed with `--shm-size=8g` on docker
    run (and `shm_size` in compose).
file-eval file 9: eval.py: loads a checkpoint, runs the val/test split with test-time
    augmentation (horizontal flip and 90° rotations, mean of softmax), writes the confusion
    matrix PNG and per-class metrics JSON.
err-resume error 9: A resumed run started at epoch 0 with the warmup learning rate again: the
    checkpoint held model and optimizer state but not the scheduler and epoch. Fixed: save and
    restore scheduler.state_dict(), the scaler, epoch and the wandb run id.
skill-checkpoint skill 10: Save a checkpoint as one dict {model, optimizer, scheduler, scaler,
    epoch, step, config, wandb_id}; resuming must reproduce the curve: check it by resuming a
    short run.
it-288 iteration 10: Iteration 10: 288 px + class weights + label smoothing: macro-F1 0.89 on
    line 3, crack 0.78. Two seeds within 0.006.
err-leak error 11 data: Validation macro-F1 jumped to 0.97 after adding line-4 images: a leak,
    near-duplicate tiles of the same sheet were in train and val. Fixed by splitting by sheet_id
    (GroupShuffleSplit); F1 back to 0.89.
skill-group-split skill 11 data: Split defect data by sheet (or by coil), not by image: adjacent
    tiles of one sheet look alike and leak between train and validation.
out-sweep output 12: wandb sweep summary (24 runs, Bayesian): best lr 3.1e-4, weight_decay 0.03,
    mixup 0.2, label_smoothing 0.1: macro-F1 0.912 (run sunny-sweep-17).
file-sweep file 12: sweeps/lr_wd.yaml: wandb sweep config, method bayes, metric val/macro_f1
    maximize; lr log-uniform 5e-5..1e-3, weight_decay 0.0..0.1, mixup {0, 0.2, 0.4};
    early_terminate hyperband min_iter 5.
task-onnx task 13 export: Task: export the best model for the line PCs (CPU only, Windows):
    ONNX, under 50 ms per tile on an i5, same predictions as PyTorch within 1e-3.
err-onnx-train-mode error 13 export: ONNX check failed: outputs differed from PyTorch by up to
    0.08: the model was exported in train mode (dropout and stochastic depth active). Fixed by
    calling model.eval() before torch.onnx.export.
out-onnx-bench output 14 export: onnxruntime benchmark (i5-8500, 1 thread): convnext_tiny
    288 px fp32 41 ms/tile; int8 dynamic quantised 19 ms/tile but macro-F1 0.871 (-0.04).
dec-fp32 iteration 14 export: Decision: ship the fp32 ONNX (41 ms/tile is within budget); int8
    quantisation lost 0.04 macro-F1, mostly on crack: not worth it.
err-dims error 15 export: `onnxruntime.capi.onnxruntime_pybind11_state.InvalidArgument: Got
    invalid dimensions for input: input for the following indices index: 2 Got: 224 Expected:
    288` on the line PC: their preprocessing still resized to 224. Fixed by reading the size
    from the model's metadata (img_size is stored in metadata_props).
file-onnx-export file 15 export: export/onnx_export.py: loads a checkpoint, model.eval(),
    exports opset 17 with a dynamic batch axis, writes img_size, mean, std and class names into
    metadata_props, verifies against PyTorch on 200 val tiles.
skill-metadata skill 16 export: Bake preprocessing parameters (size, mean, std, class order)
    into the exported model's metadata and read them in the consumer; never duplicate them in
    the consumer's code.
err-wandb-offline error 16: wandb: `Network error (ConnectionError), entering retry loop` filled
    the logs on the offline training box and the run never synced. Fixed with WANDB_MODE=offline
    there and `wandb sync runs/` from a workstation afterwards.
task-retrain task 17: Task: retrain monthly with newly labelled images from the line operators'
    review tool; keep a frozen test set (line 3, March) to compare versions.
file-retrain file 17: pipelines/retrain.py: pulls new labels from the review tool's export
    (labels_YYYYMM.csv), dedups by perceptual hash against the existing set, retrains from the
    previous best with the base config, writes a model card.
err-empty-labels error 18: Retrain crashed: `ValueError: Input contains NaN` in sklearn's
    f1_score: the new labels CSV had empty label cells for images the operators skipped. Fixed by
    dropping rows with empty labels and logging their count.
it-april iteration 19: Iteration 19: first monthly retrain (April): frozen-test macro-F1 0.915
    against 0.912; model card and ONNX published to the line PCs' share.
out-pytest output 20: pytest tests/: 23 passed, 1 skipped (needs GPU) in 41.2s
"""
    ),
    queries=parse_queries(
        r"""
dec-convnext: Why a convolutional backbone instead of an attention-based architecture?
err-collate-size: Batching crashed because some images had different dimensions. How was that
    sorted?
err-nan-amp: Why did the objective diverge to not-a-number under half precision?
skill-unscale: What order must reduced-bit arithmetic and norm capping follow?
err-cuda-oom: The accelerator exhausted its VRAM at higher resolution. How did we fit it without
    changing the step dynamics?
out-class-report it-baseline: Which defect type was the weakest in the first per-category
    breakdown?
dec-class-weights: How did we compensate for under-represented categories?
file-base-config: Where are the default hyperparameters like the step length and regularisation
    strength set?
err-ddp-hang: Multi-card runs stalled without any message once the initial pass finished. Why?
skill-ddp-debug: How do I diagnose a stuck multi-process job?
out-torchrun: How much quicker is a pass with four accelerators than with one?
err-shm: Input-pipeline subprocesses crashed in the container because of a tiny shared-memory
    mount. What's the flag?
file-eval: Which script grades a saved snapshot, averaging over mirrored inputs?
err-resume: Picking up an interrupted job began again at zero with the wrong step size. What
    wasn't persisted?
skill-checkpoint: What has to go into a snapshot so that continuation is faithful?
err-leak: Scores on the held-out portion became suspiciously high once more factory pictures
    arrived. What happened?
skill-group-split: How should photos be partitioned into fitting and evaluation subsets?
out-sweep: Which values won the automated search over step size and regularisation?
task-onnx: What are the constraints for deploying the classifier onto the shop-floor machines?
err-onnx-train-mode: The converted graph's predictions diverged from the original framework.
    Why?
dec-fp32: Did we go with the 8-bit compressed variant for the shop floor? Why or why not?
err-dims: The shop-floor machine refused tensors of the wrong resolution. What was its pipeline
    doing?
skill-metadata: Where should normalisation constants and category sequence live so downstream
    apps stay in sync?
err-wandb-offline: The experiment tracker couldn't reach its cloud from the isolated machine.
    How do we record metrics there?
err-empty-labels: The periodic refit died because some annotations were blank. What did we do?
task-retrain: What's the plan for refreshing the classifier as annotations accumulate?
-: Which Grad-CAM or saliency method do we use to explain the model's predictions?
-: How do we detect data drift on the line PCs once the model is deployed?
-: Did we try knowledge distillation into a smaller student model?
-: How are GPU jobs scheduled on the shared cluster (Slurm)?
-: What's the labelling guideline for telling pitted from inclusion defects?
"""
    ),
)

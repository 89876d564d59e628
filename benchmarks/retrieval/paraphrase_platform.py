"""Paraphrase stores of a web front end and the infrastructure repository it deploys with."""

from __future__ import annotations

from benchmarks.retrieval.paraphrase_types import Store, parse_items, parse_queries

__all__ = ["FLEET_DASHBOARD", "PLATFORM_INFRA"]

FLEET_DASHBOARD = Store(
    project="fleet-dashboard",
    description="React/TypeScript single-page app: Vite, TanStack Query, Zustand, Mapbox GL",
    items=parse_items(
        r"""
task-dashboard task 1: Task: build the fleet dashboard SPA: a map of vehicles with live
    positions, a table of vehicles with filters, and a detail drawer with the last 24 h of trips.
    Stack: Vite + React 18 + TypeScript, TanStack Query for server state.
file-main file 1: src/main.tsx: mounts <App/> inside QueryClientProvider (staleTime 30 s,
    retry 1) and BrowserRouter; imports the Tailwind entry src/index.css.
file-client file 2 api: src/api/client.ts: fetch wrapper that prefixes VITE_API_URL, adds the
    bearer token from the auth store and throws ApiError(status, body) on non-2xx; every query
    hook goes through it.
err-cors error 2 api: Browser console: `Access to fetch at 'https://api.fleet.dev/vehicles' from
    origin 'http://localhost:5173' has been blocked by CORS policy`. Fixed with a Vite dev proxy
    (server.proxy['/api']) instead of asking the backend to allow localhost.
err-update-depth error 3 react: `Warning: Maximum update depth exceeded` in VehicleTable: the
    useEffect syncing filters to the URL had `filters` (a new object every render) in its
    dependency array. Fixed by memoising filters with useMemo over the search params.
skill-effect-stable skill 3 react: When a useEffect depends on an object or array, make sure it
    is stable (useMemo/useCallback, or a primitive key); otherwise the effect runs every render.
file-map file 4 map: src/features/map/VehicleMap.tsx: Mapbox GL map; vehicles as a GeoJSON
    source updated with setData every 5 s from useVehiclePositions(); clustering below zoom 11.
err-latlng-swap error 4 map: Map showed vehicles in the sea off Africa: the API returns
    [lat, lng] but GeoJSON wants [lng, lat]. Fixed in src/features/map/toGeoJson.ts, with a test
    for a known vehicle in Hamburg.
out-vitest output 5: vitest run: Test Files 12 passed (12), Tests 57 passed (57), Duration 6.21s
dec-state iteration 5: Decision: server data lives in TanStack Query only and UI state (selected
    vehicle, open drawer, filters) in a small Zustand store; no Redux: nothing else needs
    global state.
err-stale-trips error 6: The drawer showed the previously selected vehicle's trips for a moment:
    the query key was ['trips'] without the vehicle id, so the cache served the old entry.
    Fixed: the key is ['trips', vehicleId, range].
skill-query-keys skill 6 api: Every TanStack Query key must include every variable the fetcher
    uses; keep the keys in src/api/keys.ts so they are built one way.
file-table file 7: src/features/vehicles/VehicleTable.tsx: TanStack Table with column sorting and
    a virtualised body (@tanstack/react-virtual) because fleets have up to 20k vehicles; filters
    live in the URL search params.
out-vite-build output 7: vite build: dist/assets/index-4f2a.js 1,412.36 kB │ gzip: 402.10 kB
    (!) Some chunks are larger than 500 kB after minification.
err-bundle error 8: Bundle of 1.4 MB: mapbox-gl (800 kB) was in the main chunk. Fixed by
    lazy-loading the map route with React.lazy and Suspense; the main chunk is now 310 kB
    (gzip 98 kB).
it-first-load iteration 8: Iteration 8: map, table and drawer working against the staging API;
    initial load on a throttled 3G profile 2.9 s (was 7.5 s).
err-undefined-map error 9: `TypeError: Cannot read properties of undefined (reading 'map')` in
    TripList.tsx line 23 when a vehicle has no trips: the API returns 204 with no body and the
    client returned undefined. Fixed by treating 204 as [] in the trips hook.
task-i18n task 10 i18n: Task: German and English UI (react-i18next), language from the browser
    with a switch in the header; dates and distances localised.
file-i18n file 10 i18n: src/i18n/index.ts: i18next init with resources from
    src/i18n/locales/{en,de}.json, fallbackLng 'en', detection order
    ['localStorage', 'navigator'].
err-i18n-rerender error 11 i18n: Strings stayed English after switching to German until a
    reload: components read `t` from a module-level `i18n.t` import instead of the
    useTranslation() hook, so they did not re-render. Fixed by using the hook everywhere (an
    eslint rule now forbids the import).
skill-intl-format skill 11 i18n: Format dates with Intl.DateTimeFormat(i18n.language) (wrapped in
    src/lib/format.ts), not date-fns format strings: the locale's order and 24 h clock come for
    free.
err-flaky-e2e error 12 e2e: Playwright test 'drawer shows trips' flaky on CI (passes locally): it
    clicked the row before the virtualised table rendered it. Fixed by waiting for
    `getByRole('row', { name: /HH-FL 204/ })` instead of a fixed timeout.
out-playwright output 12 e2e: npx playwright test: 18 passed, 1 flaky (drawer.spec.ts:14) (1.2m)
    [chromium, firefox]
skill-playwright skill 13 e2e: In Playwright, locate by role and accessible name and let the
    web-first assertions wait (`await expect(locator).toBeVisible()`); never
    page.waitForTimeout.
file-auth-store file 13 auth: src/stores/auth.ts: Zustand store with the access token in memory
    only and the refresh token in an httpOnly cookie set by the API; the api client calls
    refresh() once on a 401, then logs out.
err-refresh-loop error 14 auth: Infinite loop of /auth/refresh calls after the session expired:
    refresh() itself got a 401, which triggered another refresh. Fixed by excluding the refresh
    endpoint from the retry-on-401 logic.
it-auth iteration 14: Iteration 14: auth flow done (login, silent refresh, logout on expiry);
    German translation complete except the trip export dialog.
out-eslint output 15: eslint . --max-warnings 0: 3 problems (0 errors, 3 warnings):
    jsx-a11y/click-events-have-key-events in VehicleRow.tsx,
    jsx-a11y/no-static-element-interactions (2).
err-a11y-rows error 15: jsx-a11y warnings on VehicleRow: rows were clickable <div>s. Fixed by
    rendering them as <tr> with a <button> in the name cell; Enter on the keyboard opens the
    drawer.
dec-sse iteration 16 map: Decision: live positions over Server-Sent Events instead of polling
    every 5 s, because polling 20k vehicles cost 3 MB/min per open tab; fall back to polling if
    the EventSource errors twice.
file-positions file 16 map: src/features/map/useVehiclePositions.ts: opens an EventSource on
    /api/positions/stream, patches positions into the query cache with setQueryData, falls back
    to 5 s polling after two errors.
err-proxy-buffer error 17 map: Positions froze after ~2 minutes behind the corporate proxy: it
    buffers SSE responses. Fixed on the API side by sending `X-Accel-Buffering: no` and a
    comment heartbeat every 15 s.
skill-zod skill 17 api: Type API responses with zod schemas in src/api/schemas.ts and parse them
    at the client boundary; the lat/lng swap would have failed loudly with a schema.
out-tsc output 18: tsc --noEmit: Found 0 errors. vitest --coverage: statements 81.2%,
    branches 74.9%
task-trip-export task 18: Task: export the trips of a vehicle as CSV from the drawer (date range
    picker, at most 31 days).
err-excel-umlaut error 19: The CSV export opened in Excel with broken umlauts (MÃ¼nchen). Fixed
    by prefixing the file with a UTF-8 BOM ('\ufeff') and using ';' as the separator for the
    German locale.
it-release iteration 20: Iteration 20: trip export shipped; dashboard release 1.2.0 deployed to
    staging through the infra team's pipeline.
file-vite-config file 20: vite.config.ts: react plugin, dev proxy /api to https://api.fleet.dev,
    build.rollupOptions.output.manualChunks splits mapbox-gl and the table into their own
    chunks; the vitest environment is jsdom.
"""
    ),
    queries=parse_queries(
        r"""
err-cors: On my laptop the page couldn't reach the remote service because of a
    same-site security rule. Workaround?
err-update-depth: The grid component kept refreshing itself forever. What was causing it?
skill-effect-stable: What do I need to remember about composite values in a hook's watch list?
err-latlng-swap: Why were the trucks plotted in the ocean near another continent?
dec-state: Why no heavyweight app-wide container, and where is the picked truck kept?
err-stale-trips: Opening another truck flashed the prior one's journeys. Why?
skill-query-keys: What has to go into the cache identifiers of our data hooks?
file-table: How does the big list of trucks stay smooth with tens of thousands of rows?
err-bundle: The shipped script weighed too much. What got deferred?
out-vite-build: How heavy was the first optimised JavaScript output, per the tooling's warning?
err-undefined-map: The journeys panel blew up for a truck that had never driven. Why?
task-i18n: What was asked regarding translating the interface?
err-i18n-rerender: After picking another tongue, labels only changed after a page refresh. What
    was wrong?
skill-intl-format: How should calendar values be displayed for each reader's region?
err-flaky-e2e: The headless-browser scenario was green on laptops but intermittent on the
    build servers. What was the race?
skill-playwright: How should end-to-end specs pick elements and pause for them?
file-auth-store: Where do we hold the sign-in credential, and what happens when it lapses?
err-refresh-loop: After sign-in lapsed, the app kept hitting the renewal route endlessly. Why?
err-a11y-rows: How did we make grid entries usable without a mouse?
dec-sse: Why push coordinates to the page rather than asking for them on a timer?
err-proxy-buffer: Live coordinates stalled shortly after connecting from the office network.
    What was going on?
skill-zod: How do we validate backend payloads at runtime?
err-excel-umlaut: Accented city names came out mangled in the spreadsheet app after download.
    What was done?
-: How do we enable dark mode in the dashboard?
-: Which service worker caching strategy did we choose for offline use?
-: How do we report front-end errors to Sentry?
-: What's the Storybook setup for the vehicle table components?
-: How do we show a vehicle's fuel level on the map markers?
"""
    ),
)

PLATFORM_INFRA = Store(
    project="platform-infra",
    description="Infrastructure repository: Terraform on AWS, EKS, Helm charts, Argo CD, "
    "GitHub Actions",
    items=parse_items(
        r"""
task-platform task 1: Task: stand up the platform for the company's services on AWS: a VPC, an
    EKS cluster and an RDS PostgreSQL instance, all in Terraform, with one state per environment
    (staging, prod).
file-backend file 1 terraform: terraform/envs/staging/backend.tf: S3 backend bucket
    acme-tfstate, key staging/terraform.tfstate, DynamoDB table tf-locks for state locking,
    region eu-central-1.
dec-env-dirs iteration 1 terraform: Decision: one directory per environment under
    terraform/envs/ calling shared modules in terraform/modules/, instead of workspaces:
    separate state files, and separate plans reviewers can read.
err-state-lock error 2 terraform: `Error acquiring the state lock: ConditionalCheckFailedException`
    on terraform plan. A cancelled CI run had left the lock in DynamoDB. Fixed with
    `terraform force-unlock 6f1c...` after checking that no apply was running.
skill-unlock-check skill 2 terraform: Never force-unlock the state without first checking the
    lock's Who/Created fields and the CI runs; two concurrent applies corrupted a state at a
    previous job.
file-eks-module file 3 terraform,eks: terraform/modules/eks/main.tf: EKS 1.29 via
    terraform-aws-modules/eks 20.x; one managed node group (m6i.large, 2-6 nodes) in private
    subnets; IRSA enabled; the cluster endpoint is private, plus public restricted to the office
    CIDR.
err-nodes-join error 3 eks: `Error: creating EKS Node Group: ... instances failed to join the
    kubernetes cluster` after 25 min. The private subnets had no NAT route, so the nodes could
    not reach the EKS API or ECR. Fixed by adding the NAT gateway route in modules/vpc.
out-apply-staging output 4: terraform apply (staging): Apply complete! Resources: 87 added,
    0 changed, 0 destroyed. Outputs: cluster_name = "staging-eks", rds_endpoint =
    "staging-db.c9x.eu-central-1.rds.amazonaws.com"
file-values file 4 helm: charts/orders-api/values.yaml: replicas 2, image from ECR, requests
    250m/256Mi, limits 1/512Mi, readiness probe GET /healthz, env from the Secret orders-api-env
    (synced by external-secrets).
err-crashloop-dsn error 5 k8s: orders-api pods in CrashLoopBackOff with `KeyError:
    'DATABASE_URL'` in the logs. The ExternalSecret referenced the AWS Secrets Manager key
    `orders/database_url` but the secret had been created as `orders-api/database_url`. Fixed
    the remoteRef key.
skill-crashloop skill 5 k8s: When a pod crash-loops, read `kubectl logs <pod> --previous` (the
    crashed container's output) and the events of `kubectl describe pod` before changing
    anything.
err-oom-worker error 6 k8s: Worker pods OOMKilled (exit code 137) every few hours: the Celery
    worker grows with large CSV exports and its limit was 512Mi. Raised to 1Gi and set
    worker_max_tasks_per_child=50 with the app team.
file-hpa file 6 helm: charts/orders-api/templates/hpa.yaml: HorizontalPodAutoscaler on CPU 70%,
    min 2, max 10; needs metrics-server (installed by the platform chart).
err-metrics-tls error 7 k8s: The HPA showed `<unknown>/70%` and never scaled: metrics-server
    could not scrape the kubelets (`x509: cannot validate certificate ... because it doesn't
    contain any IP SANs`). Fixed by enabling serverTLSBootstrap on the nodes and approving
    kubelet serving CSRs with kubelet-csr-approver; --kubelet-insecure-tls was rejected as
    unsafe.
it-staging iteration 7: Iteration 7: staging runs orders-api and its worker; autoscaling works;
    prod not created yet.
file-platform-chart file 8 helm: charts/platform/: ingress-nginx, cert-manager with a
    ClusterIssuer letsencrypt-prod (HTTP-01 via nginx), external-secrets and metrics-server;
    installed by Argo CD as an app-of-apps from argocd/apps/.
err-cert-pending error 8 k8s: Certificate stuck in `Issuing`: cert-manager's HTTP-01 challenge
    got 404 because the solver had no ingress class. Fixed by setting `ingressClassName: nginx`
    in the ClusterIssuer's http01 solver.
dec-gitops iteration 9: Decision: Argo CD (GitOps) deploys everything in the clusters; CI only
    builds images and bumps the tag in charts/*/values-<env>.yaml. Nobody runs helm upgrade by
    hand.
file-build-wf file 9 ci: .github/workflows/build.yml: on push to main, builds the Docker image,
    pushes it to ECR tagged with the git sha, then opens a PR bumping the tag in
    values-staging.yaml; prod is promoted by a manual PR.
err-ecr-denied error 10 ci: CI failed pushing to ECR: `denied: User:
    arn:aws:sts::123456789012:assumed-role/gha-ci/... is not authorized to perform:
    ecr:InitiateLayerUpload`. The OIDC role's policy only allowed ecr:GetAuthorizationToken.
    Fixed by adding the push actions, scoped to the repository ARN.
skill-oidc skill 10 ci: CI authenticates to AWS with GitHub OIDC
    (aws-actions/configure-aws-credentials, role-to-assume), never with long-lived access keys in
    secrets.
out-plan-prod output 11 terraform: terraform plan (prod): Plan: 91 to add, 0 to change, 0 to
    destroy.
err-rds-replace error 11 terraform: terraform plan wanted to replace the RDS instance (`forces
    replacement`) because engine_version 15.4 in the module differs from the auto-upgraded 15.5
    in AWS. Fixed by setting engine_version = "15", allow_major_version_upgrade = false and
    auto_minor_version_upgrade = true.
skill-plan-review skill 12 terraform: Read every `terraform plan` for `must be replaced` lines
    before applying; add `lifecycle { prevent_destroy = true }` to databases and state buckets.
it-prod iteration 12: Iteration 12: prod environment created; RDS with deletion protection and
    Multi-AZ; orders-api promoted to prod by PR #214.
file-rds-module file 13 terraform: terraform/modules/rds/main.tf: PostgreSQL 15, db.t4g.medium
    (staging) / db.r6g.large (prod), storage autoscaling to 200 GB, backups 7 days (prod 30),
    Performance Insights on, password in Secrets Manager via manage_master_user_password.
err-sg-pods error 13: The app could not connect to RDS from the pods: timeouts on 5432. The RDS
    security group allowed the node group's SG, but pods use the cluster primary SG. Fixed by
    allowing the cluster security group as a source.
task-cost task 14: Task: cost review. Target: cut the staging bill by 30% without touching prod.
out-infracost output 14: infracost breakdown (staging): NAT gateway $98/mo, EKS control plane
    $73/mo, node group 3x m6i.large $210/mo, RDS db.t4g.medium $58/mo; total $463/mo.
dec-spot iteration 15: Decision: staging runs on Spot instances (mixed m6i/m5/m5a large) and a
    single NAT gateway instead of one per AZ; prod keeps on-demand nodes and three NAT gateways
    for zone failures.
err-spot-both error 16 k8s: A Spot interruption took down both staging replicas of orders-api at
    once (same instance). Fixed with a topologySpreadConstraint across nodes and a
    PodDisruptionBudget with minAvailable 1.
out-pods output 16 k8s: kubectl get pods -n orders -o wide: orders-api-7d9c-2kq 1/1 Running
    ip-10-0-12-34; orders-api-7d9c-x8w 1/1 Running ip-10-0-44-7; orders-worker-5f6b-qp 1/1
    Running, 0 restarts
skill-module-plans skill 17 terraform: Changes to modules/ go through `terraform plan` in both
    envs in the PR (the plan workflow comments them); merge only when both plans are what the PR
    says.
file-tf-wf file 17 ci: .github/workflows/terraform.yml: on PR runs fmt -check, validate, tflint
    and plan for staging and prod and posts the plans as PR comments; apply runs on merge for
    staging, prod apply needs the 'prod' environment approval.
err-tflint-typo error 18 terraform: tflint: `Warning: [aws_instance_invalid_type] "t3a.mega" is
    an invalid value as instance_type` in modules/bastion. A typo for t3a.medium; fixed.
err-ingress-503 error 19 k8s: After the EKS upgrade to 1.30, ingress-nginx returned 503 for every
    host: the controller chart was too old for the removed API. Fixed by upgrading the
    ingress-nginx chart to 4.10 via Argo CD.
it-cost iteration 20: Iteration 20: staging costs $301/mo (-35%); EKS 1.30 on both envs; no prod
    incident during the upgrade.
skill-eks-upgrade skill 20 eks: Upgrade EKS one minor version at a time, staging first, and check
    the charts for removed APIs (`pluto detect-helm`) before each step.
"""
    ),
    queries=parse_queries(
        r"""
err-state-lock: An aborted build job kept the infrastructure mutex held. What did we do?
skill-unlock-check: What must I verify before manually releasing a stuck mutex on the
    infrastructure snapshot?
dec-env-dirs: Why does each deployment stage get its own folder rather than a single codebase
    with switchable contexts?
err-nodes-join: The VMs never showed up as members of the container platform. Which outbound
    internet path was missing?
file-values: How much compute and memory does the purchasing service reserve, and where do its
    credentials come from?
err-crashloop-dsn: The purchasing service's containers kept restarting because a DSN variable
    was absent. What was misnamed?
skill-crashloop: What should I inspect when a workload keeps dying and coming back?
err-oom-worker: Background job processes were repeatedly terminated for using too much RAM.
    What was adjusted?
err-metrics-tls: Autoscaling didn't react because resource usage figures were missing. What was
    behind it?
file-platform-chart: Which shared add-ons does each environment get, and what deploys them?
err-cert-pending: The new hostname's padlock never appeared; domain validation kept getting
    not-found. What was wrong?
dec-gitops: What rolls new versions out, and may people do that manually?
err-ecr-denied: The build robot's cloud identity was refused when publishing containers to the
    registry. What got granted?
skill-oidc: How should the pipeline log in to the cloud provider?
err-rds-replace: Why did the preview say the managed Postgres would be destroyed and rebuilt
    after the cloud patched it silently?
skill-plan-review: What do I scan for in a preview before rolling out changes, and how do we
    guard precious stores against deletion?
file-rds-module: Where are the hosted relational engine's size, snapshot retention and
    credential handling set?
err-sg-pods: Containers timed out reaching the managed Postgres on its port. What firewall rule
    was wrong?
out-infracost: How much did the pre-prod setup cost per month by component, before the savings
    work?
dec-spot: How did we make the pre-release setup cheaper while leaving the live environment
    robust?
err-spot-both: Every copy of the service died together when a cheap machine was reclaimed. What
    prevents that now?
err-ingress-503: Following the managed Kubernetes bump, all sites answered "service
    unavailable". What was outdated?
skill-eks-upgrade: What's the safe procedure for moving the container platform to a newer
    release?
err-tflint-typo: What did the linter catch in the jump box code?
-: How do we back up and restore the cluster's etcd or Kubernetes state?
-: What's our DNS setup: one Route 53 zone per environment?
-: How do we rotate the RDS master password?
-: Which logging stack collects the container logs (Loki or CloudWatch)?
-: How is the VPN to the office configured?
"""
    ),
)

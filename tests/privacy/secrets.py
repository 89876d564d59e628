"""Secret-shaped values of every kind the redactor knows, and look-alikes it must keep.

Made up here (random-looking, never real credentials); each kind has the shape its provider
documents, so a rule that finds these finds the real ones.
"""

from __future__ import annotations

PEM_BODY = (
    "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
    "QyNTUxOQAAACDxq3mK8vRt2LpZ4nWc9XyH7bJ5sDf1GkA0eQuTiOwYhAAAAJgZ2mKfGdpi\n"
    "nwAAAAtzc2gtZWQyNTUxOQAAACDxq3mK8vRt2LpZ4nWc9XyH7bJ5sDf1GkA0eQuTiOwYhA\n"
)

# kind -> a value of that kind (what must not survive).
SECRETS: dict[str, str] = {
    "aws_access_key_id": "AKIAQ3EGRT7KZP2XN4WB",
    "github_token": "ghp_9Fq2LmZx7YtR4pWk8sNv3HbC6dJe1aU0oQiT",
    "slack_token": "xoxb-2841957364-5829163740521-Rk8sLw2QpZx9YtN4vB7mJ3cD",
    "stripe_key": "sk_live_51Hx8QzK2LmNpR7sT4vW9yZ3aB6cD1eF",
    "openai_key": "sk-proj-Zx8Lq2Rm7Tn4Vb9Wc3Yd6Fg1Hj5Kp0MsQeRtYu",
    "anthropic_key": "sk-ant-api03-Ab3dEfGh1jKlMnOpQrStUvWxYz0123456789AbCdEfGhIjKlMnOpQrSt-AA",
    "google_api_key": "AIzaSyD8xK2mQ9pL4rT7vN1bC6wZ3hJ5fG0eYuI",
    "jwt": (
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiI0MiIsIm5hbWUiOiJyYWxwaCJ9."
        "Qm9ndXNTaWduYXR1cmVGb3JUZXN0c09ubHkxMjM0NQ"
    ),
    "npm_token": "npm_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "gitlab_token": "glpat-Xy7Zq2Wv9Ut4Sr1Pq6On",
    "huggingface_token": "hf_AbCdEfGhIjKlMnOpQrStUvWxYz01234567",
}
GITHUB_FINE_GRAINED = (
    "github_pat_11ABCDEFG0a1B2c3D4e5F6_g7H8i9J0k1L2m3N4o5P6q7R8s9T0u1V2w3X4y5Z6a7B8c9D0e1F2g3H4i5J6"
)
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYzq8RKe3Lm2"
DB_PASSWORD = "Tr0ub4dor&3x"
PLAIN_PASSWORD = "hunter2correcthorse"

# Issue 62's shapes, each in several of the forms its tool or file writes it: kind ->
# (text, the value that must go) pairs.
AZURE_KEY = "q8Lw2Rk9Zt4Vb7Nc3Yd6Fg1Hj5Kp0MsQeRtYuIoP1aZx8Lq2Rm7Tn4Vb9Wc3Yd6Fg1Hj5Kp0MsQeRtYuIo=="
GOOGLE_OAUTH_SECRET = "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"
TWILIO_API_KEY = "SK3f9c2a7b1e4d6f8a0b2c4d6e8f0a1b3c"
SHAPES_OF_ISSUE_62: dict[str, list[tuple[str, str]]] = {
    "azure_key": [
        (
            "DefaultEndpointsProtocol=https;AccountName=acme;"
            f"AccountKey={AZURE_KEY};EndpointSuffix=core.windows.net",
            AZURE_KEY,
        ),
        (
            "Endpoint=sb://acme.servicebus.windows.net/;SharedAccessKeyName=Root;"
            f"SharedAccessKey={AZURE_KEY[:44]}",
            AZURE_KEY[:44],
        ),
        (f"HostName=hub.azure-devices.net;SharedAccessKey = {AZURE_KEY[8:52]}", AZURE_KEY[8:52]),
    ],
    "azure_sas": [
        (
            "https://acme.blob.core.windows.net/c/a.tgz?sv=2022-11-02&sp=r&se=2030-01-01"
            "&sig=Zx8Lq2Rm7Tn4Vb9Wc3Yd6Fg1Hj5Kp0MsQeRtYu%2Bab%3D",
            "Zx8Lq2Rm7Tn4Vb9Wc3Yd6Fg1Hj5Kp0MsQeRtYu%2Bab%3D",
        ),
    ],
    "password": [
        ("docker login -u ci -p Zx9Lq2Rm7Tn4Wq registry.example.com", "Zx9Lq2Rm7Tn4Wq"),
        ("podman login quay.io -u bot -p='Zx9 Lq2Rm7Tn4Wq'", "Zx9 Lq2Rm7Tn4Wq"),
        ("echo go && docker login --password Zx9Lq2Rm7Tn4Wq ghcr.io", "Zx9Lq2Rm7Tn4Wq"),
        ("mysql -u root -pS3cr3tPa55word -h db shop", "S3cr3tPa55word"),
        ("mysqldump -uroot -p'S3cr3t Pa55word' shop > shop.sql", "S3cr3t Pa55word"),
        ('mariadb -h db -u app -p"S3cr3tPa55word" -e "select 1"', "S3cr3tPa55word"),
        ("sshpass -p 'Tr0ub4dor&3xQ' ssh deploy@10.0.0.4 uptime", "Tr0ub4dor&3xQ"),
        ("sshpass -pTr0ub4dor3xQ scp build.tgz deploy@host:", "Tr0ub4dor3xQ"),
        (
            "machine api.heroku.com\n  login me@example.com\n  password 8f2c9a1e77b4d0a9",
            "8f2c9a1e77b4d0a9",
        ),
        ("machine github.com login octocat password Gh0Lq2Rm7Tn4Vb", "Gh0Lq2Rm7Tn4Vb"),
        ("default login anonymous password Anon0Lq2Rm7", "Anon0Lq2Rm7"),
        ("db.internal:5432:appdb:app:Tr0ub4dor3xQ", "Tr0ub4dor3xQ"),
        ("*:*:*:postgres:pgS3cret!x", "pgS3cret!x"),
        ("pgbouncer:6432:*:stats:St4tsPw0rd", "St4tsPw0rd"),
        ("echo 'localhost:15432:db:me:hunter2xQ' >> ~/.pgpass", "hunter2xQ"),
        ("redis-cli -h cache -a Zx9Lq2Rm7Tn4Wq ping", "Zx9Lq2Rm7Tn4Wq"),
        ("requirepass Zx9Lq2Rm7Tn4Wq", "Zx9Lq2Rm7Tn4Wq"),
        ("mongosh mongodb://h/db -u admin -p Zx9Lq2Rm7Tn4Wq", "Zx9Lq2Rm7Tn4Wq"),
    ],
    "google_oauth_secret": [
        (f"GOOGLE_CLIENT_SECRET={GOOGLE_OAUTH_SECRET}", GOOGLE_OAUTH_SECRET),
        (f'{{"web": {{"client_secret": "{GOOGLE_OAUTH_SECRET}"}}}}', GOOGLE_OAUTH_SECRET),
        (f"oauth client {GOOGLE_OAUTH_SECRET} rejected", GOOGLE_OAUTH_SECRET),
    ],
    "google_oauth_token": [
        (
            "Authorization header ya29.a0AfH6SMBx8Lq2Rm7Tn4Vb9Wc3Yd6Fg1Hj5Kp0MsQ expired",
            "ya29.a0AfH6SMBx8Lq2Rm7Tn4Vb9Wc3Yd6Fg1Hj5Kp0MsQ",
        ),
    ],
    "twilio_api_key": [
        (f"TWILIO_API_KEY={TWILIO_API_KEY}", TWILIO_API_KEY),
        (f"client = Client('{TWILIO_API_KEY}', api_secret, account_sid)", TWILIO_API_KEY),
        (
            f"twilio api key {TWILIO_API_KEY.lower().replace('sk', 'SK', 1)}",
            TWILIO_API_KEY.lower().replace("sk", "SK", 1),
        ),
    ],
    "url_password": [
        ("redis://:Zx9Lq2Rm7Tn4Wq@cache.internal:6379/0", "Zx9Lq2Rm7Tn4Wq"),
        ("CELERY_BROKER=rediss://:p%40ssZx9Lq2@cache:6380", "p%40ssZx9Lq2"),
        ("amqp://:Zx9Lq2Rm7Tn4Wq@broker/vhost", "Zx9Lq2Rm7Tn4Wq"),
    ],
}

# (surroundings, value): each kind in the contexts a loop stores it in.
IN_CONTEXT: list[tuple[str, str]] = [
    *[(f"the build used {value} and failed", value) for value in SECRETS.values()],
    *[(f'{{"credential": "{value}", "ok": true}}', value) for value in SECRETS.values()],
    *[(f"env:\n  FOO: '{value}'\n", value) for value in SECRETS.values()],
    *[(f"export SOME_VALUE={value}\n", value) for value in SECRETS.values()],
    (f"GITHUB_TOKEN={GITHUB_FINE_GRAINED} git push", GITHUB_FINE_GRAINED),
    (f"aws_secret_access_key = {AWS_SECRET}", AWS_SECRET),
    (f'{{"SecretAccessKey": "{AWS_SECRET}"}}', AWS_SECRET),
    (f"postgres://app:{DB_PASSWORD}@db.internal:5432/main", DB_PASSWORD),
    (f"DATABASE_URL=mysql://root:{DB_PASSWORD}@127.0.0.1/x", DB_PASSWORD),
    (f"PASSWORD={PLAIN_PASSWORD}", PLAIN_PASSWORD),
    (f"export DB_PASSWORD='{PLAIN_PASSWORD}'", PLAIN_PASSWORD),
    (f"database:\n  password: {PLAIN_PASSWORD}\n  user: app", PLAIN_PASSWORD),
    (f'{{"password": "{PLAIN_PASSWORD}"}}', PLAIN_PASSWORD),
    (f"mysql -u root --password {PLAIN_PASSWORD} -e 'select 1'", PLAIN_PASSWORD),
    (f"login(user='a', password='{PLAIN_PASSWORD}')", PLAIN_PASSWORD),
    (f"curl -H 'Authorization: Bearer {PLAIN_PASSWORD}x9' api", PLAIN_PASSWORD + "x9"),
    (f"clientSecret: {PLAIN_PASSWORD}", PLAIN_PASSWORD),
    (f"https://hooks.slack.com/services/T0123ABCD/B0456EFGH/{PLAIN_PASSWORD}Xy12", PLAIN_PASSWORD),
    (f"see <private>{PLAIN_PASSWORD} lives at 12 Elm St</private> ok", PLAIN_PASSWORD),
    *[
        (f"-----BEGIN {kind}PRIVATE KEY-----\n{PEM_BODY}-----END {kind}PRIVATE KEY-----", PEM_BODY)
        for kind in ("", "RSA ", "EC ", "DSA ", "OPENSSH ", "ENCRYPTED ")
    ],
    (
        f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{PEM_BODY}-----END PGP PRIVATE KEY BLOCK-----",
        PEM_BODY,
    ),
    *[pair for pairs in SHAPES_OF_ISSUE_62.values() for pair in pairs],
    # A key in a JSON string, newlines escaped.
    (
        '{"private_key": "-----BEGIN PRIVATE KEY-----\\n'
        + PEM_BODY.replace("\n", "\\n")
        + '-----END PRIVATE KEY-----\\n"}',
        PEM_BODY.replace("\n", "\\n"),
    ),
]

# Texts the redactor must leave byte for byte.
LOOK_ALIKES: list[str] = [
    "commit 3f786850e387550fdab836ed7e6dc881de23001b fixes the flaky test",
    "merged 3f78685 into main",
    "request id 123e4567-e89b-12d3-a456-426614174000 timed out",
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "docker pull python@sha256:9f0c3b6d1f2e4a5b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b",
    "FIXTURE = 'aGVsbG8gd29ybGQgdGhpcyBpcyBhIGJhc2U2NCBmaXh0dXJlIGZvciB0ZXN0cw=='",
    "AKIA is the prefix of AWS access key ids; ASIA marks temporary ones.",
    "Set AWS_SECRET_ACCESS_KEY and GITHUB_TOKEN in your environment first.",
    "PASSWORD=${DB_PASSWORD}",
    "export API_KEY=$API_KEY_FROM_VAULT",
    "password = request.form['password']",
    "token = os.environ['GITHUB_TOKEN']",
    "api_key: str = Field(default=None)",
    "token: Optional[str] = None",
    "the token: it expired yesterday, rotate it",
    "tokenizer: bert-base-uncased",
    "max_tokens: 1200\nprompt_tokens=532\ncompletion_tokens: 88",
    "token_type: bearer",
    "password_file: /run/secrets/db_password",
    "secret_name: prod-database",
    "api_key = settings.api_key",
    "pip install scikit-learn && sk-learn-compatible-estimator-2024",
    "The password field is required.",
    "Use `API_KEY=` in .env (left empty here)",
    "BEGIN PRIVATE KEY appears in the docs as a heading, nothing else",
    "postgres://db.internal:5432/main",
    "https://example.com/path?query=value",
    # Found as false positives in code, tool output and LongMemEval turns, then fixed:
    "def emitToken(self, token: Token):",
    "def addErrorNode(self, badToken: Token) -> Node:",
    "password: OAuthFlowPassword | None = None",
    "return BasicAuth(username=username, password=password)",
    'if password == "-":',
    'tokenText = "<" + str(name) + ">"',
    "GOOGLE_APPLICATION_CREDENTIALS=/app/credentials/service-account.json",
    'DATABASE_URL = "postgresql://user:password@localhost/mydatabase"',
    "2. Create a Google Secret Manager secret: You can create one in the console",
    "* 1Password: A password manager that offers a travel mode",
    "Purpose and goals of the token: The token funds the commons",
    "{'CREDENTIALS_CODE': 'c', 'CREDENTIALS_ENV_VARS': 'g'}",
    "aws_secret_access_key='testing',",
    '"input_token": "NextToken", "output_token": "NextToken",',
    'PUBLIC_KEY_OR_PASSWORD = "PUBLIC_KEY_OR_PASSWORD"',
    'CLIENT_CREDENTIALS = "client_credentials"',
    '"Resource": "arn:aws:secretsmanager:*:*:secret:ModelProviderKey-*"',
    '"AWS::IAM::AccessKey": "fe0421bc85d18f9d",',
    "pass the --username and --password options instead of the URL",
    "MAX_TOKENS = 1_000_000",
    "search(query, max_tokens=budget.tokens)",
    'return {"RALPH_CONTEXT_TOKEN": TOKEN}',
    # Beside issue 62's shapes: what the same tools and files print that is no secret.
    "mysql -u root -p shop",
    "mysql -u root -p$MYSQL_ROOT_PASSWORD shop",
    "mysql --port=3306 -P 3306 -h db",
    "sshpass -e ssh deploy@host",
    "docker login --password-stdin ghcr.io",
    "docker run -p 8080:80 nginx",
    "a machine with password protection",
    "the default password is written on the box",
    "src/app.py:12:5:E501:line-too-long",
    "12:30:45:001:start",
    "redis://cache.internal:6379/0",
    "redis://:password@localhost:6379",
    "AccountName=acme;EndpointSuffix=core.windows.net",
    "Skip SKU SKIPPED: SK-2024-release notes",
    "sig=abc",
]

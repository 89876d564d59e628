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
]

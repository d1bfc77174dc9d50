"""Secret-like strings of many kinds, each with the part that must never be stored.

Values are fabricated to have the real shapes; none is a live credential.
"""

# (text as an agent might send it, the secret inside it)
SECRETS = [
    ("AWS access key id AKIAIOSFODNN7EXAMPLE in the config", "AKIAIOSFODNN7EXAMPLE"),
    ("temporary creds ASIAY34FZKBOKMUTVV7A were issued", "ASIAY34FZKBOKMUTVV7A"),
    ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"),
    ("github token ghp_16C7e42F292c6912E7710c838347Ae178B4a for CI", "ghp_16C7e42F292c6912E7710c838347Ae178B4a"),
    ("oauth gho_0123456789abcdefghijABCDEFGHIJ012345 expired", "gho_0123456789abcdefghijABCDEFGHIJ012345"),
    ("use glpat-xVLzY8b3Qw2KfNn9RtPe for the gitlab api", "glpat-xVLzY8b3Qw2KfNn9RtPe"),
    ("slack bot xoxb-2142413547-3325174421-abcdefghijklmnopqrstuvwx", "xoxb-2142413547-3325174421-abcdefghijklmnopqrstuvwx"),
    ("webhook https://hooks.slack.com/services/T0ABCDEFG/B0ABCDEFG/XyZ123abcDEF456ghiJKL789",
     "XyZ123abcDEF456ghiJKL789"),
    ("stripe live key sk_live_4eC39HqLyjWDarjtT1zdp7dc", "sk_live_4eC39HqLyjWDarjtT1zdp7dc"),
    ("stripe test key sk_test_51HqLyjWDarjtT1zdp7dcXYZ", "sk_test_51HqLyjWDarjtT1zdp7dcXYZ"),
    ("restricted rk_live_9fG3kLmN0pQrStUvWxYz1234", "rk_live_9fG3kLmN0pQrStUvWxYz1234"),
    ("jwt eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4ifQ."
     "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c",
     "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq98K3tUfYp1mPZlq\nQ2VzdGluZ0tleU1hdGVyaWFs\n"
     "-----END RSA PRIVATE KEY-----", "MIIEowIBAAKCAQEA7bq98K3tUfYp1mPZlq"),
    ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----",
     "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ"),
    ("db is postgres://admin:Sup3rS3cretPw@db.internal:5432/prod", "Sup3rS3cretPw"),
    ("broker amqp://guest:rabbitpass99@mq:5672/", "rabbitpass99"),
    ("redis://:r3disPassw0rd@cache:6379/0", "r3disPassw0rd"),
    ("password=hunter2isnotsafe", "hunter2isnotsafe"),
    ("my password is CorrectHorseBattery9", "CorrectHorseBattery9"),
    ('api_key: "9f8e7d6c5b4a39281706f5e4d3c2b1a0"', "9f8e7d6c5b4a39281706f5e4d3c2b1a0"),
    ("export API_KEY='live-abc123-XYZ-789'", "live-abc123-XYZ-789"),
    ("client_secret=Q7v-Pz3kLm9_NbX2wR", "Q7v-Pz3kLm9_NbX2wR"),
    ("Authorization: Bearer abcdef0123456789ABCDEFghijkl", "abcdef0123456789ABCDEFghijkl"),
    ("sendgrid 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", "SG.ngeVfQFYQlKU0ufo8x5d1A"),
    ("twilio SK2b1f3c4d5e6f708192a3b4c5d6e7f809 rotate monthly", "SK2b1f3c4d5e6f708192a3b4c5d6e7f809"),
    ("npm //registry.npmjs.org/:_authToken=npm_AbCdEf1234567890AbCdEf1234567890AbCd", "npm_AbCdEf1234567890AbCdEf1234567890AbCd"),
    ("pypi token pypi-AgEIcHlwaS5vcmcCJDU3OTM5ZTAyLTY0YTItNGU3Yi1iNmUyLTk4MzQ0ZDc5NzRmNQACKlsz"
     "LCJmMTYyZjJjZC0xOTAxLTQ5OGEtYWFlNy1hNzQ5ZTNhNmU0ZGIiXQAABiCJ2QcH",
     "AgEIcHlwaS5vcmcCJDU3OTM5ZTAyLTY0YTItNGU3Yi1iNmUyLTk4MzQ0ZDc5NzRmNQ"),
    ("google maps AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe", "AIzaSyDaGmWKa4JsXZ-HjGw7ISLn_3namBGewQe"),
    ("openai sk-proj4BcD3fGh1jKlMnOpQrStT3BlbkFJaBcDeFgHiJkLmNoPqRsT", "sk-proj4BcD3fGh1jKlMnOpQrStT3BlbkFJaBcDeFgHiJkLmNoPqRsT"),
    ("azure AccountKey=" + "Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0Z2FycGx5d2FsZG9mcmVkcGx1Z3h5enp5" + "dGhvcm9ib2Rvdw==12345678" + ";",
     "Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0Z2FycGx5d2FsZG9mcmVkcGx1Z3h5enp5"),
    ("telegram 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawQ", "AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawQ"),
    ("discord MTA4NzY1NDMyMTIzNDU2Nzg5.GhIjKl.AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "GhIjKl.AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"),
    ("session token x9Fq2LmZp8RtVw3KbN7sYc4HdJ6gTe5Ua1", "x9Fq2LmZp8RtVw3KbN7sYc4HdJ6gTe5Ua1"),
    ("mailchimp 0123456789abcdef0123456789abcdef-us14", "0123456789abcdef0123456789abcdef-us14"),
]

# Text that must come through untouched: ordinary memories, ids, hashes, URLs without passwords.
HARMLESS = [
    "The user prefers tea over coffee and lives in Lisbon.",
    "Deploy ticket 550e8400-e29b-41d4-a716-446655440000 was closed on 2026-03-04.",
    "Commit 9fceb02d0ae598e95dc970b74767f19372d61af8 fixed the login bug.",
    "Docs are at https://example.com/guide/getting-started?lang=en#install.",
    "Pneumonoultramicroscopicsilicovolcanoconiosis is a long word.",
    "The password policy requires twelve characters.",
]

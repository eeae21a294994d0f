"""Writes cases.json: inputs, beyond gitleaks' own examples, on which the Rust scanner must
agree with Claude Code's JavaScript (see claude_code_oracle.mjs). One positive per rule, near
misses, and the places where JavaScript and Rust regexes differ unless the port is careful
(ASCII-only \\b and case folding, JavaScript's \\s, lookaheads, redaction's quote handling).
The random tokens come from a fixed seed, so the file is reproducible."""
import json
import random
import string

rnd = random.Random(20250101)
AZ = string.ascii_uppercase
az = string.ascii_lowercase
D = string.digits
HEX = "0123456789abcdef"
ALNUM = AZ + az + D


def r(chars, n):
    return "".join(rnd.choice(chars) for _ in range(n))


tokens = {
    "aws": "AKIA" + r(AZ + "234567", 16),
    "aws_asia": "ASIA" + r(AZ + "234567", 16),
    "gcp": "AIza" + r(ALNUM + "_-", 35),
    "gocspx": "GOCSPX-" + r(ALNUM + "_-", 28),
    "azure": r(ALNUM, 3) + "8Q~" + r(ALNUM + "_~.-", 32),
    "dop": "dop_v1_" + r(HEX, 64),
    "doo": "doo_v1_" + r(HEX, 64),
    "ant": "sk-ant-api03-" + r(ALNUM + "_-", 93) + "AA",
    "ant_admin": "sk-ant-admin01-" + r(ALNUM + "_-", 93) + "AA",
    "openai": "sk-proj-" + r(ALNUM + "_-", 40) + "T3BlbkFJ" + r(ALNUM + "_-", 40),
    "openai_legacy": "sk-" + r(ALNUM, 48),
    "hf": "hf_" + r(AZ + az, 34),
    "sb_secret": "sb_secret_" + r(ALNUM + "_-", 30),
    "sbp": "sbp_" + r(az + D, 40),
    "ghp": "ghp_" + r(ALNUM, 36),
    "github_pat": "github_pat_" + r(ALNUM + "_", 82),
    "ghs": "ghs_" + r(ALNUM, 36),
    "gho": "gho_" + r(ALNUM, 36),
    "ghr": "ghr_" + r(ALNUM, 36),
    "glpat": "glpat-" + r(ALNUM + "_-", 20),
    "gldt": "gldt-" + r(ALNUM + "_-", 20),
    "xoxb": "xoxb-" + r(D, 12) + "-" + r(D, 12) + "-" + r(ALNUM, 24),
    "xoxp": "xoxp-" + "-".join(r(D, 12) for _ in range(3)) + "-" + r(ALNUM, 32),
    "xapp": "xapp-1-A" + r(AZ + D, 10) + "-" + r(D, 13) + "-" + r(az + D, 64),
    "twilio": "SK" + r(HEX, 32),
    "sendgrid": "SG." + r(ALNUM + "_-", 22) + "." + r(ALNUM + "_-", 43),
    "npm": "npm_" + r(ALNUM, 36),
    "pypi": "pypi-AgEIcHlwaS5vcmc" + r(ALNUM + "_-", 70),
    "dapi": "dapi" + r(HEX, 32),
    "atlas": r(ALNUM, 14) + ".atlasv1." + r(ALNUM + "-_=", 64),
    "pulumi": "pul-" + r(HEX, 40),
    "postman": "PMAK-" + r(HEX, 24) + "-" + r(HEX, 34),
    "grafana": "eyJrIjoi" + r(ALNUM, 80),
    "glc": "glc_" + r(ALNUM + "+/", 40),
    "glsa": "glsa_" + r(ALNUM, 32) + "_" + r(HEX, 8),
    "sntryu": "sntryu_" + r(HEX, 64),
    "sntrys": "sntrys_eyJpYXQiO" + r(ALNUM, 20) + "LCJyZWdpb25fdXJs" + r(ALNUM, 20) + "_" + r(ALNUM, 43),
    "stripe": "sk_live_" + r(ALNUM, 24),
    "shpat": "shpat_" + r(HEX, 32),
    "shpss": "shpss_" + r(HEX, 32),
    "jwt": "eyJ" + r(ALNUM, 20) + "." + r(ALNUM, 30) + "." + r(ALNUM + "_-", 30),
}
body = "\n".join(r(ALNUM + "+/", 64) for _ in range(4))
pem = f"-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----"

cases = []
# One positive per token, alone, quoted, assigned, and inside prose.
for name, tok in tokens.items():
    cases += [tok, f'export {name.upper()}_TOKEN="{tok}"', f"The key `{tok}` is in the vault.", f"{name}: {tok}\n"]
cases += [pem, f"key = '''{pem}'''", pem.lower(), "private_key: " + pem.replace("\n", "\\n")]

# Near misses: one character short, wrong prefix case, glued to other word characters.
cases += [
    tokens["aws"][:-1],
    "x" + tokens["aws"],
    tokens["aws"] + "x",
    tokens["gcp"] + "-",
    tokens["gcp"] + "\u00e9",
    tokens["openai_legacy"] + "z",
    tokens["ghp"][:-1],
    tokens["xoxb"].replace("xoxb", "XOXB"),
    tokens["ant"][:-2] + "AB",
    tokens["stripe"].replace("sk_live_", "sk_demo_"),
    "SK" + "g" * 32,
]
# JavaScript regexes without the u flag: \b and \w are ASCII, i folds ASCII only, \s is
# JavaScript's set (NBSP and BOM in, NEL out).
cases += [
    "\u00e9" + tokens["aws"],
    tokens["aws"] + "\u00e9",
    "\u00a0" + tokens["azure"] + "\u00a0",
    "\ufeff" + tokens["azure"],
    "x\u0085" + tokens["azure"],
    tokens["azure"] + "\u0085",
    "\u2028" + tokens["hf"] + "\u2028",
    tokens["hf"] + "\u0085",
    tokens["xapp"].replace("A", "\u212a", 1),
    "xapp-1-\u017f" + tokens["xapp"][8:],
    tokens["xapp"].upper(),
    "-----BEGIN \u017fSA PRIVATE KEY-----\n" + body + "\n-----END RSA PRIVATE KEY-----",
    "-----BEGIN RSA PRIVATE \u212aEY-----\n" + body + "\n-----END RSA PRIVATE KEY-----",
    tokens["dop"] + "\\n",
    tokens["dop"] + "\\t",
    tokens["dop"] + ";",
    tokens["dop"] + ",",
]
# Redaction: every low-confidence rule, quotes kept, already-redacted text left alone,
# several matches of one rule, overlapping rules.
cases += [
    'password = "hunter2hunter2"',
    "password: 'p@ss w0rd'",
    "PASSWORD=hunter2;next=1",
    "api_key=[REDACTED]",
    "Authorization: Bearer " + r(ALNUM, 40),
    "authorization = Basic " + r(ALNUM, 30) + "==",
    "curl -H 'Authorization: Bearer abc.def-ghi_jkl~mno+pqr/stu=' https://x",
    "https://alice:s3cr3t@example.com/path and ftp://bob@host/ and https://host/x@y",
    "postgres://app:" + r(ALNUM, 16) + "@db.internal:5432/app",
    "svc-account@my-project-123.iam.gserviceaccount.com",
    "sk-ant-" + r(ALNUM, 20),
    tokens["jwt"],
    "AWS_SECRET_ACCESS_KEY=" + r(ALNUM + "/+", 40),
    "GCP_CREDENTIALS: '" + r(ALNUM, 20) + "'",
    "azure_client_secret = " + tokens["azure"],
    "session_id: abc123; cookie=chocolate",
    "connection-string: Server=x;Password=y",
    "private_key = " + pem,
    "ssh_key: x" + pem + '"',
    f"{tokens['ghp']} and {tokens['ghp']} and {tokens['gho']}",
    f"token={tokens['ghp']}",
    f"{tokens['aws']} {tokens['ghp']} {tokens['stripe']} {pem}",
    "no secrets here, just a note about AKIA prefixes and sk- keys",
    "",
    "\u3000token\u3000=\u3000" + r(ALNUM, 20),
    "token=\u00a0" + r(ALNUM, 20),
]
# Later releases' rules (2.1.232 on): GitLab's token kinds in their newer form, Slack's rotation,
# workflow, webhook and other user tokens, Anthropic OAuth tokens inside runs of token
# characters, and private keys whose BEGIN or END line was already redacted (2.1.324 on).
W = ALNUM + "_=-"
later = {
    "glpat_new": "glpat-" + r(W, 26) + "." + r(az + D, 9),
    "glpat_long": "glpat-" + r(ALNUM, 24),
    "glrt": "glrt-" + r(W, 22),
    "gloas": "gloas-" + r(W, 40),
    "glptt": "glptt-" + r(W, 20),
    "glagent": "glagent-" + r(W, 50),
    "glimt": "glimt-" + r(W, 25),
    "glsoat": "glsoat-" + r(W, 20),
    "glcbt": "glcbt-" + r(W, 20),
    "glft": "glft-" + r(W, 20),
    "glffct": "glffct-" + r(W, 20),
    "xoxe_rot": "xoxe.xoxp-1-" + r(ALNUM + "-", 40),
    "xoxe_1": "xoxe-1-" + r(ALNUM, 30),
    "xoxa": "xoxa-" + "-".join(r(D, 11) for _ in range(3)) + "-" + r(ALNUM, 30),
    "xoxr": "xoxr-" + "-".join(r(D, 12) for _ in range(3)) + "-" + r(ALNUM, 28),
    "xwfp": "xwfp-" + r(ALNUM + "-", 30),
    "webhook": "https://hooks.slack.com/services/T" + r(AZ + D, 8) + "/B" + r(AZ + D, 8) + "/" + r(ALNUM, 24),
    "oat": "sk-ant-oat01-" + r(ALNUM + "_-", 40),
    "ort": "sk-ant-ort01-" + r(ALNUM + "_-", 40),
}
for name, tok in later.items():
    cases += [tok, f'{name.upper()}="{tok}"', f"see {tok} here", tok + "x!"]
cases += [
    "glpat-" + r(W, 19),
    "x" + later["glrt"],
    "hooks.slack.com/services/" + r(ALNUM, 39),
    "HOOKS.SLACK.COM/workflows/" + r(ALNUM, 45),
    "xwfp-" + r(ALNUM, 19),
    "abc_" + later["oat"],
    "abc-" + later["oat"],
    "\\n" + later["oat"],
    "q\\n" + later["oat"] + "\\r",
    later["oat"] + "!",
    later["oat"] + "\u00e9",
    "sk-ant-oat1-" + r(ALNUM, 30),
    "sk-ant-oat01-" + r(ALNUM, 19),
]
redacted_pems = [
    f"[REDACTED]PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----",
    f"[REDACTED-RSA]-BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----",
    f"[REDACTED] RSA PRIVATE KEY-----\n{body}\n[REDACTED]PRIVATE KEY-----",
    f"-----BEGIN EC PRIVATE KEY-----\n{body}\n[REDACTED-EC]----END EC PRIVATE KEY-----",
    f"-----BEGIN PRIVATE KEY-----\n{body}\n[REDACTED]",
    f"[REDACTED]-- PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----",
    f"[REDACTED]- PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----",
    f"[REDACTED]-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----",
    f"[redacted]private key-----\n{body}\n-----end private key-----",
    f"[REDACTED]PRIVATE KEY-----\n{body[:50]}\n-----END PRIVATE KEY-----",
    f"[REDACTED]PRIVATE KEY BLOCK-----\n{body}\n[REDACTED-PGP]PRIVATE KEY BLOCK-----",
    f"-----BEGIN OPENSSH PRIVATE KEY-----\n{body[:40]}\n-----END OPENSSH PRIVATE KEY-----\n{body}\n-----END OPENSSH PRIVATE KEY-----",
    f"[REDACTED-TOOLONGTOOLONGTOOLONGX]PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----",
    f"-----BEGIN  PRIVATE KEY-----\n{body}\n-----END--PRIVATE KEY-----",
]
cases += redacted_pems
# The span check's edges: exactly 63 and 64 characters between the lines (an emoji is two
# JavaScript characters), and redaction markers whose captured part holds `--`.
for gap in ("A" * 63, "A" * 64, "\U0001F600" * 31 + "A", "\U0001F600" * 32, "A" * 62 + "\U0001F600"):
    cases += [f"-----BEGIN PRIVATE KEY-----{gap}-----END PRIVATE KEY-----"]
cases += [
    f"[REDACTED] --PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----",
    f"[REDACTED] -- RSA PRIVATE KEY-----\n{body}\n[REDACTED]PRIVATE KEY-----",
    f"-----BEGIN PRIVATE KEY-----\n{body}\n[REDACTED] A--B PRIVATE KEY-----",
    f"-----BEGIN PRIVATE KEY-----\n{body}\n[REDACTED]-END PRIVATE KEY-----",
]
with open("cases.json", "w") as f:
    json.dump(cases, f, ensure_ascii=True, indent=0)
    f.write("\n")

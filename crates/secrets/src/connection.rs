//! Mneme's one rule beyond Claude Code's table: database and broker connection strings that
//! carry a password (`postgres://app:s3cret@db/app`, `mongodb+srv://…`, `redis://:pw@…`,
//! `amqp://…`, and the `?password=` query form).
//!
//! A connection string whose password is clearly not one is left alone, because team memory
//! is exactly where people write down how to reach the development database:
//! - a variable or template reference (`${DB_PASSWORD}`, `$PGPASSWORD`, `{{ .Values.pw }}`,
//!   `%(password)s`, `%DB_PASS%`);
//! - a bracketed name (`<password>`, `[password]`, `{password}`);
//! - a mask (`****`, `xxxx`, `…`), or one character repeated;
//! - the user name again (`postgres:postgres@localhost`, `guest:guest@`): a default credential
//!   anyone can guess is not a secret to keep.
//!
//! Literal words are not treated as placeholders: `user:pass@host` may well be the password.

use regex::Regex;
use std::sync::LazyLock;

/// The rule id; its label is "Connection String Password".
pub const RULE_ID: &str = "connection-string-password";

/// The scheme, then either `user:password@host` or a `password=` query parameter. Quotes and
/// backticks end a token, so a string quoted in code or Markdown is read without them.
pub const PATTERN: &str = concat!(
    r"(?i)\b(?:(?:postgres(?:ql)?|mysql|mariadb)(?:\+[a-z0-9]+)?|mongodb(?:\+srv)?|rediss?|amqps?)://",
    r#"(?:(?P<user>[^\s:/?#@"'`]*):(?P<pass>[^\s/?#"'`]+)@[^\s/?#@"'`]"#,
    r#"|[^\s?#"'`]*\?(?:[^\s#"'`]*&)?password=(?P<qpass>[^\s&#"'`]+))"#,
);

static RE: LazyLock<Regex> = LazyLock::new(|| Regex::new(PATTERN).expect("the connection-string pattern compiles"));

/// Whether `content` holds a connection string with a real-looking password.
pub fn has_password(content: &str) -> bool {
    RE.captures_iter(content).any(|c| match (c.name("pass"), c.name("qpass")) {
        (Some(p), _) => !is_placeholder(p.as_str(), c.name("user").map(|u| u.as_str())),
        (None, Some(q)) => !is_placeholder(q.as_str(), None),
        (None, None) => false,
    })
}

/// Whether a password is a stand-in rather than a secret (see the module docs).
pub fn is_placeholder(password: &str, user: Option<&str>) -> bool {
    let p = password;
    let enclosed = |open: char, close: char| p.len() > 2 && p.starts_with(open) && p.ends_with(close);
    let mut chars = p.chars();
    let first = chars.next();
    let repeated = first.is_some_and(|f| chars.all(|c| c == f));
    p.starts_with('$')
        || p.starts_with("{{")
        || p.starts_with("{%")
        || p == "%s"
        || (p.starts_with("%(") && p.ends_with(")s"))
        || enclosed('%', '%')
        || enclosed('<', '>')
        || enclosed('[', ']')
        || enclosed('{', '}')
        || repeated
        || p.chars().all(|c| matches!(c, '*' | 'x' | 'X' | '.' | '\u{2022}' | '\u{25CF}' | '\u{2026}'))
        || user.is_some_and(|u| u == p)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_passwords_in_every_scheme_and_form() {
        for s in [
            "postgres://app:s3cretPw@db.internal:5432/app",
            "postgresql://app:s3cretPw@db/app",
            "postgresql+psycopg2://app:s3cretPw@db/app",
            "jdbc:mysql://root:Tr0ub4dor@10.0.0.5:3306/shop",
            "mariadb://u:Tr0ub4dor@h",
            "mongodb://admin:Tr0ub4dor@mongo:27017/?authSource=admin",
            "mongodb+srv://svc:Tr0ub4dor@cluster0.abcde.mongodb.net/db",
            "redis://:Tr0ub4dor@cache:6379/0",
            "rediss://default:Tr0ub4dor@cache:6380",
            "amqp://worker:Tr0ub4dor@rabbit:5672/vhost",
            "amqps://worker:Tr0ub4dor@rabbit/vhost",
            "DATABASE_URL=\"postgres://app:p@ss:w0rd@db/app\"",
            "`POSTGRES://APP:S3CRET@DB/APP`",
            "postgres://db.internal/app?sslmode=require&password=s3cretPw",
            "postgresql://db/app?password=s3cretPw",
            "postgres://user:pass@host",
        ] {
            assert!(has_password(s), "{s}");
        }
    }

    #[test]
    fn leaves_placeholders_and_password_less_strings_alone() {
        for s in [
            "postgres://app@db/app",
            "postgres://db/app",
            "postgres://app:@db/app",
            "postgres://app:${DB_PASSWORD}@db/app",
            "postgres://app:$PGPASSWORD@db/app",
            "postgres://app:{{ .Values.password }}@db/app",
            "postgres://app:<password>@db/app",
            "postgres://app:[password]@db/app",
            "mysql://root:****@localhost/shop",
            "mysql://root:xxxxxxxx@localhost/shop",
            "mongodb://admin:%(password)s@mongo",
            "redis://:%REDIS_PASSWORD%@cache",
            "postgres://postgres:postgres@localhost:5432/dev",
            "amqp://guest:guest@localhost:5672/",
            "postgres://db/app?password=${PW}",
            "https://user:s3cretPw@example.com/",
            "xpostgres://app:s3cretPw@db/app",
            "see postgres://app:[REDACTED]@db/app",
        ] {
            assert!(!has_password(s), "{s}");
        }
    }
}

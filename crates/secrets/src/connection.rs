//! Mneme's one rule beyond Claude Code's table: database and broker connection strings that
//! carry a password (`postgres://app:s3cret@db/app`, `mongodb+srv://…`, `redis://:pw@…`,
//! `amqp://…`, `mssql+pyodbc://…`, `oracle://…`, `clickhouse://…`, the `?password=` query form
//! and JDBC's `;password=` property, and Oracle's `oracle:thin:user/password@…`).
//!
//! A password may hold `/`, `?`, `#` or `@` unencoded (people write them so): when the URL's
//! authority (up to the first `/`, `?` or `#`) has no `@`, the user information is read up to
//! the first `@` further on, unless what follows the `:` is a port (`db:5432/app?x=a@b`).
//!
//! A connection string whose password is clearly not one is left alone, because team memory
//! is exactly where people write down how to reach the development database:
//! - a variable or template reference (`${DB_PASSWORD}`, `$PGPASSWORD`, `$(DB_PASSWORD)`,
//!   `{{ .Values.pw }}`, `%(password)s`, `%DB_PASS%`); a password that merely starts with `$`
//!   (`$uperS3cret`) is a password;
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

/// A scheme, then the rest of the token: quotes, backticks and whitespace end it, so a string
/// quoted in code or Markdown is read without them.
pub const PATTERN: &str = concat!(
    r"(?i)\b(?:(?:postgres(?:ql)?|mysql|mariadb|mssql|sqlserver|oracle|clickhouse|cockroachdb|tidb)(?:\+[a-z0-9_]+)?",
    r#"|mongodb(?:\+srv)?|rediss?|amqps?)://(?P<rest>[^\s"'`]*)"#,
);

/// Oracle's JDBC thin form: `jdbc:oracle:thin:scott/tiger@//host:1521/svc`.
const ORACLE_THIN: &str = r#"(?i)\boracle:thin:(?P<user>[^\s/@:"'`]+)/(?P<pass>[^\s@"'`]+)@"#;

/// A password given as a query parameter or a JDBC/ODBC property.
const QUERY_PASSWORD: &str = r"(?i)[?&;](?:password|pwd)=(?P<qpass>[^&;#]*)";

static RE: LazyLock<Regex> = LazyLock::new(|| Regex::new(PATTERN).expect("the connection-string pattern compiles"));
static ORACLE: LazyLock<Regex> = LazyLock::new(|| Regex::new(ORACLE_THIN).expect("the Oracle pattern compiles"));
static QUERY: LazyLock<Regex> = LazyLock::new(|| Regex::new(QUERY_PASSWORD).expect("the query pattern compiles"));

/// Whether `content` holds a connection string with a real-looking password.
pub fn has_password(content: &str) -> bool {
    let url = RE.captures_iter(content).any(|c| {
        let rest = c.name("rest").map_or("", |m| m.as_str());
        userinfo_password(rest).is_some_and(|(user, pass)| !is_placeholder(pass, Some(user)))
            || QUERY.captures_iter(rest).any(|q| q.name("qpass").is_some_and(|p| !p.as_str().is_empty() && !is_placeholder(p.as_str(), None)))
    });
    url || ORACLE.captures_iter(content).any(|c| !is_placeholder(&c["pass"], Some(&c["user"])))
}

/// The user and password of `user:password@host…` (what follows `scheme://`), if any.
fn userinfo_password(rest: &str) -> Option<(&str, &str)> {
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (userinfo, host, beyond_authority) = match rest[..authority_end].rfind('@') {
        Some(at) => (&rest[..at], &rest[at + 1..], false),
        None => {
            let at = rest.find('@')?;
            (&rest[..at], &rest[at + 1..], true)
        }
    };
    if host.is_empty() || host.starts_with(['/', '?', '#', '@']) {
        return None;
    }
    let (user, pass) = userinfo.split_once(':')?;
    if pass.is_empty() || user.contains(['/', '?', '#', '@']) {
        return None;
    }
    // `db:5432/app?opt=a@b`: a host and port, then an `@` in the path or query.
    if beyond_authority && pass.split(['/', '?', '#']).next().is_some_and(|port| port.bytes().all(|b| b.is_ascii_digit())) {
        return None;
    }
    Some((user, pass))
}

/// `VAR`: a variable name in one case (`PGPASSWORD`, `db_pass`), as gitleaks' global allowlist
/// spells `$VAR`; a mixed-case word after `$` (`$uperS3cret`) reads as a password.
fn is_var_name(s: &str) -> bool {
    let one_case = |upper: bool| {
        let mut chars = s.chars();
        let letter = |c: char| c == '_' || if upper { c.is_ascii_uppercase() } else { c.is_ascii_lowercase() };
        chars.next().is_some_and(letter) && chars.all(|c| letter(c) || c.is_ascii_digit())
    };
    one_case(true) || one_case(false)
}

/// Whether a password is a stand-in rather than a secret (see the module docs).
pub fn is_placeholder(password: &str, user: Option<&str>) -> bool {
    let p = password;
    let enclosed = |open: char, close: char| p.len() > 2 && p.starts_with(open) && p.ends_with(close);
    let mut chars = p.chars();
    let first = chars.next();
    let repeated = first.is_some_and(|f| chars.all(|c| c == f));
    // `$VAR`, `${VAR}` (with a shell default or the like inside), Kubernetes' `$(VAR)`.
    let variable = p.strip_prefix('$').is_some_and(|v| {
        is_var_name(v)
            || (v.len() > 2 && v.starts_with('{') && v.ends_with('}') && !v[1..v.len() - 1].contains(['{', '}']))
            || v.strip_prefix('(').and_then(|v| v.strip_suffix(')')).is_some_and(is_var_name)
    });
    variable
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
            // A password that merely starts with `$` is one.
            "postgres://app:$uperS3cretPw@db.prod/app",
            "postgres://app:$$9Qx@db/app",
            "postgres://app:$Tr0ub4dor@db/app",
            // `/`, `?`, `#` and `@` unencoded in the password.
            "postgres://app:abc/def9Qx@db.prod/app",
            "postgres://app:abc?def9Qx@db.prod/app",
            "postgres://app:abc#def9Qx@db.prod/app",
            "mysql://app:a/b@c#d@db/app?x=1",
            // SQL Server, Oracle, ClickHouse and the rest.
            "mssql://sa:Tr0ub4dor9@db/app",
            "mssql+pyodbc://sa:Tr0ub4dor9@dsn",
            "sqlserver://sa:Tr0ub4dor9@db:1433",
            "jdbc:sqlserver://db:1433;databaseName=app;user=sa;password=Tr0ub4dor9;",
            "oracle://scott:Tr0ub4dor9@db:1521/orcl",
            "oracle+cx_oracle://scott:Tr0ub4dor9@db:1521/?service_name=app",
            "jdbc:oracle:thin:scott/Tr0ub4dor9@//db:1521/app",
            "jdbc:oracle:thin:scott/Tr0ub4dor9@db:1521:orcl",
            "clickhouse://default:Tr0ub4dor9@ch:9000/db",
            "clickhouse+native://default:Tr0ub4dor9@ch/db",
            "jdbc:clickhouse://ch:8123/db?user=default&password=Tr0ub4dor9",
            "cockroachdb://root:Tr0ub4dor9@crdb:26257/app",
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
            "postgres://app:$(DB_PASSWORD)@db/app",
            "postgres://app:${DB_PASSWORD:-dev}@db/app",
            "jdbc:oracle:thin:scott/${ORACLE_PW}@db:1521:orcl",
            "jdbc:sqlserver://db:1433;user=sa;password=${SA_PASSWORD}",
            // A port, then an `@` in the path or query: no user information.
            "postgres://db:5432/app?application_name=me@host",
            "mssql://db.internal:1433/app",
            "clickhouse://ch:9000/db?user=default&password=",
        ] {
            assert!(!has_password(s), "{s}");
        }
    }
}

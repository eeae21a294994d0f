//! One HTTP exchange with the team server, and the error classes Claude Code sorts failures
//! into (`classifyAxiosError`): 401/403 → auth, a timeout → timeout, refused connections and
//! unknown hosts → network, any other status → http.

use crate::wire::{ANTHROPIC_BETA, SYNC_TIMEOUT_MS};
use std::time::Duration;

/// Bodies larger than this are refused while reading (a whole team's memory is far smaller:
/// entries are capped at 250 KB and servers cap their number).
pub const MAX_RESPONSE_BYTES: u64 = 1 << 30;

/// What a sign-in answer (a device code, tokens, who signed in) may be: a few hundred bytes,
/// and a hostile server's must not take 1 GiB of the app's memory on the way to being refused.
pub const MAX_SIGN_IN_RESPONSE_BYTES: u64 = 1 << 20;

/// How much of a refusal's body is read (the errors Claude Code's servers and Mneme's send
/// are a few hundred bytes).
const MAX_ERROR_BODY_BYTES: u64 = 64 * 1024;

/// What the client sends as `User-Agent`. Claude Code sends `claude-code/<version>`; Mneme
/// names itself so a server operator can tell the two apart in logs.
pub fn user_agent() -> String {
    format!("mneme/{}", env!("CARGO_PKG_VERSION"))
}

/// How a request failed, before any meaning is given to the status.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Failure {
    /// 401 or 403.
    Auth { status: u16, body: String },
    /// No answer within the timeout.
    Timeout,
    /// Nobody listens there, or the host name does not resolve.
    Network { detail: String },
    /// Any other status the caller does not accept.
    Http { status: u16, body: String },
    /// Anything else on the way (TLS, a broken connection mid-body, a malformed URL).
    Other { detail: String },
}

/// An answered request whose status the caller accepts.
#[derive(Debug, Clone)]
pub struct Reply {
    pub status: u16,
    pub etag: Option<String>,
    pub body: String,
}

/// How long an answer's body may take to arrive once it has started.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(600);

/// A blocking HTTP client with Claude Code's headers and 30-second timeout.
#[derive(Clone)]
pub struct Http {
    agent: ureq::Agent,
    /// Why the certificates `NODE_EXTRA_CA_CERTS` names cannot be used: every request fails
    /// with this rather than going out without the authority the user said to trust.
    unusable_roots: Option<String>,
}

impl std::fmt::Debug for Http {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Http").finish_non_exhaustive()
    }
}

impl Default for Http {
    fn default() -> Self {
        Http::new(Duration::from_millis(SYNC_TIMEOUT_MS))
    }
}

/// A request: method, URL, optional bearer token, extra headers and body.
pub struct Request<'a> {
    pub method: &'a str,
    pub url: &'a str,
    pub token: Option<&'a str>,
    pub headers: Vec<(&'a str, String)>,
    /// A JSON body (sent with `Content-Type: application/json`).
    pub json: Option<String>,
    /// A form body (`application/x-www-form-urlencoded`), for OAuth endpoints.
    pub form: Option<Vec<(&'a str, String)>>,
    /// The most of an accepted answer read ([`MAX_RESPONSE_BYTES`] unless the caller expects
    /// a small one); a longer answer fails.
    pub max_body: u64,
}

impl<'a> Request<'a> {
    pub fn new(method: &'a str, url: &'a str) -> Self {
        Request { method, url, token: None, headers: Vec::new(), json: None, form: None, max_body: MAX_RESPONSE_BYTES }
    }
}

impl Http {
    /// `timeout` bounds each step up to the start of the answer; reading the answer's body
    /// gets [`BODY_TIMEOUT`]: a repository's memory may be tens of megabytes, and on a slow
    /// link a pull bounded by 30 seconds overall would time out on every try, for ever.
    pub fn new(timeout: Duration) -> Self {
        Http::with_roots(timeout, ureq::tls::RootCerts::WebPki)
    }

    /// The client for the user's environment: the built-in certificate authorities, plus those
    /// in the PEM file `NODE_EXTRA_CA_CERTS` names, as Claude Code trusts them (a company's
    /// own authority, a TLS-inspecting proxy's).
    pub fn for_env(env: &mneme_store::Environment) -> Self {
        let timeout = Duration::from_millis(SYNC_TIMEOUT_MS);
        match extra_roots(env) {
            Ok(None) => Http::new(timeout),
            Ok(Some(roots)) => Http::with_roots(timeout, roots),
            Err(why) => Http { unusable_roots: Some(why), ..Http::new(timeout) },
        }
    }

    fn with_roots(timeout: Duration, roots: ureq::tls::RootCerts) -> Self {
        let config = ureq::Agent::config_builder()
            .tls_config(ureq::tls::TlsConfig::builder().root_certs(roots).build())
            .timeout_connect(Some(timeout))
            .timeout_send_request(Some(timeout))
            .timeout_send_body(Some(timeout))
            .timeout_recv_response(Some(timeout))
            .timeout_recv_body(Some(BODY_TIMEOUT.max(timeout)))
            // Statuses are data here (304, 404, 412 and 413 all mean something).
            .http_status_as_error(false)
            .user_agent(user_agent())
            // A redirect would carry the bearer token to wherever it points.
            .max_redirects(0)
            .build();
        Http { agent: ureq::Agent::new_with_config(config), unusable_roots: None }
    }

    /// Sends `req`; statuses in `accept` come back as a [`Reply`], every other outcome as a
    /// classified [`Failure`].
    pub fn send(&self, req: Request<'_>, accept: &[u16]) -> Result<Reply, Failure> {
        // Never put a bearer token or team memory on the network unencrypted, whatever the
        // configured URL (TEAM_MEMORY_SYNC_URL is not checked when it is set).
        crate::config::transport_allowed(req.url).map_err(|e| Failure::Other { detail: e.to_string() })?;
        if let Some(why) = &self.unusable_roots {
            return Err(Failure::Other { detail: why.clone() });
        }
        let result = match req.method {
            "GET" | "DELETE" => {
                let mut b = if req.method == "GET" { self.agent.get(req.url) } else { self.agent.delete(req.url) };
                b = b.header("anthropic-beta", ANTHROPIC_BETA);
                if let Some(t) = req.token {
                    b = b.header("Authorization", format!("Bearer {t}"));
                }
                for (k, v) in &req.headers {
                    b = b.header(*k, v);
                }
                b.call()
            }
            _ => {
                let mut b = match req.method {
                    "PUT" => self.agent.put(req.url),
                    _ => self.agent.post(req.url),
                };
                b = b.header("anthropic-beta", ANTHROPIC_BETA);
                if let Some(t) = req.token {
                    b = b.header("Authorization", format!("Bearer {t}"));
                }
                for (k, v) in &req.headers {
                    b = b.header(*k, v);
                }
                if let Some(form) = &req.form {
                    b.send_form(form.iter().map(|(k, v)| (*k, v.as_str())))
                } else {
                    b.header("Content-Type", "application/json").send(req.json.as_deref().unwrap_or(""))
                }
            }
        };
        let mut resp = result.map_err(classify)?;
        let status = resp.status().as_u16();
        let etag = resp.headers().get("etag").and_then(|v| v.to_str().ok()).map(str::to_string);
        if accept.contains(&status) {
            let body = resp.body_mut().with_config().limit(req.max_body).read_to_string().map_err(classify)?;
            return Ok(Reply { status, etag, body });
        }
        // A refusal explains itself in a few lines of JSON or text; of a longer one only the
        // start is read, so a hostile server cannot fill memory with its error page.
        let mut head = Vec::new();
        let read = std::io::Read::read_to_end(&mut std::io::Read::take(resp.body_mut().with_config().reader(), MAX_ERROR_BODY_BYTES), &mut head);
        // A refusal whose body never came (a timeout, a reset) is that failure, not the status.
        if let Err(e) = read {
            if head.is_empty() {
                return Err(classify(ureq::Error::from(e)));
            }
        }
        let body = String::from_utf8_lossy(&head).into_owned();
        Err(match status {
            401 | 403 => Failure::Auth { status, body },
            _ => Failure::Http { status, body },
        })
    }
}

/// The largest certificate bundle read (a system bundle is ~200 KB).
const MAX_CA_BUNDLE_BYTES: u64 = 16 << 20;

/// Where the system's certificate bundle lives (Debian and Ubuntu, Fedora and RHEL, Alpine
/// and macOS), after `SSL_CERT_FILE`.
const SYSTEM_BUNDLES: [&str; 3] = ["/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"];

/// The authorities to trust when `NODE_EXTRA_CA_CERTS` is set: its certificates and the
/// system's bundle (ureq takes one list, so the built-in one cannot be extended; the system's
/// holds the same public authorities). `Ok(None)` when the variable is not set.
fn extra_roots(env: &mneme_store::Environment) -> Result<Option<ureq::tls::RootCerts>, String> {
    let Some(path) = env.var("NODE_EXTRA_CA_CERTS").map(str::trim).filter(|p| !p.is_empty()) else { return Ok(None) };
    let certificates = |file: &std::path::Path| -> Result<Vec<ureq::tls::Certificate<'static>>, String> {
        let (bytes, _) = mneme_store::open::read_plain_capped(file, MAX_CA_BUNDLE_BYTES).map_err(|e| format!("could not be read ({e})"))?;
        Ok(ureq::tls::parse_pem(&bytes)
            .filter_map(|item| match item {
                Ok(ureq::tls::PemItem::Certificate(c)) => Some(c),
                _ => None,
            })
            .collect())
    };
    let unusable = |why: &str| format!("NODE_EXTRA_CA_CERTS names {path}, which {why}; point it at a PEM file of certificates, or unset it");
    let extra = certificates(std::path::Path::new(path)).map_err(|why| unusable(&why))?;
    if extra.is_empty() {
        return Err(unusable("holds no certificates"));
    }
    let system = env.var("SSL_CERT_FILE").into_iter().chain(SYSTEM_BUNDLES).find_map(|f| certificates(std::path::Path::new(f)).ok().filter(|c| !c.is_empty()));
    let mut all = system.unwrap_or_default();
    all.extend(extra);
    Ok(Some(ureq::tls::RootCerts::new_with_certs(&all)))
}

fn classify(e: ureq::Error) -> Failure {
    let detail = e.to_string();
    // An untrusted certificate stays untrusted however often it is asked for; say where trust
    // comes from.
    if detail.contains("invalid peer certificate") || detail.contains("UnknownIssuer") {
        return Failure::Other {
            detail: format!("{detail}: if your company's certificate authority or a TLS-inspecting proxy signs the team server's certificate, set NODE_EXTRA_CA_CERTS to that authority's PEM file, as for Claude Code"),
        };
    }
    match e {
        ureq::Error::Timeout(_) => Failure::Timeout,
        ureq::Error::BodyExceedsLimit(limit) => Failure::Other {
            detail: format!("its answer is longer than the {limit} bytes Mneme reads for this request, far more than a team memory server sends; check the server address"),
        },
        ureq::Error::HostNotFound => Failure::Network { detail: "the host name does not resolve".into() },
        ureq::Error::ConnectionFailed => Failure::Network { detail: "the connection was refused".into() },
        ureq::Error::Io(io) => match io.kind() {
            std::io::ErrorKind::ConnectionRefused => Failure::Network { detail: "the connection was refused".into() },
            std::io::ErrorKind::TimedOut => Failure::Timeout,
            _ => Failure::Other { detail: io.to_string() },
        },
        other => Failure::Other { detail: other.to_string() },
    }
}

/// JavaScript's `encodeURIComponent`: everything but `A-Z a-z 0-9 - _ . ! ~ * ' ( )` is
/// percent-encoded as UTF-8 (so the slash of `owner/name` goes as `%2F`).
pub fn encode_uri_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `base` without trailing slashes, so `base + "/api/..."` never doubles one (axios joins
/// its base URL the same way).
pub fn trim_base(base: &str) -> &str {
    base.trim_end_matches('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uri_component_matches_javascript() {
        assert_eq!(encode_uri_component("owner/name"), "owner%2Fname");
        assert_eq!(encode_uri_component("A-z_0.9!~*'()"), "A-z_0.9!~*'()");
        assert_eq!(encode_uri_component("a b&c=d?é"), "a%20b%26c%3Dd%3F%C3%A9");
        assert_eq!(trim_base("http://h:1//"), "http://h:1");
    }

    #[test]
    fn user_agent_names_mneme() {
        assert_eq!(user_agent(), format!("mneme/{}", env!("CARGO_PKG_VERSION")));
    }

    /// A team server whose certificate a company's own authority signed is trusted once
    /// NODE_EXTRA_CA_CERTS names it (as Claude Code trusts it), with the public authorities
    /// still trusted beside it; until then the failure says where trust comes from.
    #[test]
    fn a_company_certificate_authority_is_trusted_through_node_extra_ca_certs() {
        use mneme_testsupport::tls;
        let url = tls::https_server(|_| tls::json_response("{\"entries\":{}}"));
        let home = mneme_testsupport::TestHome::new();
        match Http::for_env(&home.env).send(Request::new("GET", &url), &[200]) {
            Err(Failure::Other { detail }) => assert!(detail.contains("NODE_EXTRA_CA_CERTS"), "{detail}"),
            other => panic!("an unknown authority is refused, got {other:?}"),
        }
        let trusting = home.env.clone().set_var("NODE_EXTRA_CA_CERTS", tls::test_ca().to_str().unwrap());
        let reply = Http::for_env(&trusting).send(Request::new("GET", &url), &[200]).unwrap();
        assert_eq!((reply.status, reply.body.as_str()), (200, "{\"entries\":{}}"));
        let empty = home.root.join("empty.pem");
        std::fs::write(&empty, "").unwrap();
        let broken = home.env.clone().set_var("NODE_EXTRA_CA_CERTS", empty.to_str().unwrap());
        match Http::for_env(&broken).send(Request::new("GET", &url), &[200]) {
            Err(Failure::Other { detail }) => assert!(detail.contains("empty.pem") && detail.contains("holds no certificates"), "{detail}"),
            other => panic!("an unusable bundle is named, got {other:?}"),
        }
    }

    #[test]
    fn plain_http_to_another_machine_is_never_sent() {
        // 192.0.2.1 is TEST-NET-1: were the request sent, it would hang until the timeout.
        let start = std::time::Instant::now();
        match Http::default().send(Request::new("GET", "http://192.0.2.1/api/claude_code/team_memory"), &[200]) {
            Err(Failure::Other { detail }) => assert!(detail.contains("use https://"), "{detail}"),
            other => panic!("expected the request to be refused, got {other:?}"),
        }
        assert!(start.elapsed() < std::time::Duration::from_secs(1));
    }

    #[test]
    fn a_long_body_may_take_longer_than_the_answer_may_take_to_start() {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://127.0.0.1:{}/x", listener.local_addr().unwrap().port());
        let server = std::thread::spawn(move || {
            let (mut s, _) = listener.accept().unwrap();
            let mut buf = [0u8; 4096];
            let _ = s.read(&mut buf);
            s.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\nConnection: close\r\n\r\n").unwrap();
            // Three parts over 600 ms, each well within the 300 ms a step may take.
            for part in [&b"abc"[..], b"def", b"ghi"] {
                std::thread::sleep(std::time::Duration::from_millis(200));
                s.write_all(part).unwrap();
                s.flush().unwrap();
            }
        });
        let reply = Http::new(std::time::Duration::from_millis(300)).send(Request::new("GET", &url), &[200]).unwrap();
        assert_eq!(reply.body, "abcdefghi");
        server.join().unwrap();
    }

    #[test]
    fn refused_connections_are_network_errors() {
        // Bind then drop a listener: the port is free and nothing answers there.
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let url = format!("http://127.0.0.1:{port}/x");
        match Http::default().send(Request::new("GET", &url), &[200]) {
            Err(Failure::Network { .. }) => {}
            other => panic!("expected a network failure, got {other:?}"),
        }
    }

    #[test]
    fn only_the_start_of_a_huge_refusal_is_read() {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/api/claude_code/team_memory", listener.local_addr().unwrap());
        let server = std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            let mut request = [0u8; 4096];
            let _ = conn.read(&mut request);
            let size = 8 * 1024 * 1024;
            let _ = write!(conn, "HTTP/1.1 500 Internal Server Error\r\ncontent-length: {size}\r\nconnection: close\r\n\r\n");
            let chunk = vec![b'x'; 64 * 1024];
            for _ in 0..size / chunk.len() {
                if conn.write_all(&chunk).is_err() {
                    break; // the client stopped reading, as it should
                }
            }
        });
        match Http::default().send(Request::new("GET", &url), &[200]) {
            Err(Failure::Http { status: 500, body }) => assert_eq!(body.len() as u64, MAX_ERROR_BODY_BYTES),
            other => panic!("expected a 500 with the start of its body, got {other:?}"),
        }
        server.join().unwrap();
    }
}

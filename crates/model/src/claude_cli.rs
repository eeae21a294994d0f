//! The user's own Claude Code (`claude`) in headless mode, with its own login (a Claude
//! subscription or whatever the user configured), so Mneme needs no API key.
//!
//! - [`Provider::complete`] runs `claude -p --output-format json --tools "" --system-prompt …`
//!   (plus `--json-schema` for structured output): one answer, no tools.
//! - [`Provider::headless`] runs a whole agent task: `claude -p --output-format stream-json
//!   --verbose --permission-mode dontAsk --allowedTools … --disallowedTools … --max-turns N` in
//!   the task's folder, and reads the event stream for the result and the files it wrote. In
//!   `dontAsk` mode anything the allow rules do not cover is denied, never asked.
//!
//! Every run sets `CLAUDE_CODE_DISABLE_CLAUDE_MDS=1` and `CLAUDE_CODE_DISABLE_AUTO_MEMORY=1` and
//! passes `--no-session-persistence`: Mneme's own questions must not see (or be steered by) the
//! user's instructions and memory, and must not leave transcripts in `~/.claude/projects`, where
//! Mneme's extraction would read them back as a session of the user's. The prompt goes in on
//! stdin, because a transcript can outgrow the 128 KiB limit of one command-line argument.

use crate::{
    Block, Cancel, HeadlessAgent, HeadlessOutcome, HeadlessTask, Message, ModelError, Provider, ProviderKind, Request, Response, Role,
    StopReason, Usage,
};
use futures_util::future::BoxFuture;
use mneme_store::Environment;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStderr, ChildStdout, Command};

/// Tools whose `file_path` input names a file the agent writes.
const WRITING_TOOLS: [&str; 4] = ["Write", "Edit", "MultiEdit", "NotebookEdit"];

pub struct ClaudeCliProvider {
    binary: PathBuf,
    model: Option<String>,
    vars: BTreeMap<String, String>,
    workdir: PathBuf,
    timeout: Duration,
}

impl ClaudeCliProvider {
    /// Runs `binary` with the variables and home of `env` (and nothing from Mneme's own process).
    /// One-shot questions run in `<data dir>/claude-cli`, an empty folder with no instructions.
    pub fn new(binary: impl Into<PathBuf>, env: &Environment) -> Self {
        let mut vars = env.vars.clone();
        vars.insert("HOME".into(), env.home.to_string_lossy().into_owned());
        ClaudeCliProvider {
            binary: binary.into(),
            model: None,
            vars,
            workdir: env.data_dir().join("claude-cli"),
            timeout: Duration::from_secs(600),
        }
    }

    /// `--model`; `None` leaves Claude Code's own choice.
    pub fn with_model(mut self, model: Option<String>) -> Self {
        self.model = model.filter(|m| !m.trim().is_empty());
        self
    }

    /// The limit for one run, after which the process is killed.
    pub fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    pub fn binary(&self) -> &Path {
        &self.binary
    }

    fn command(&self, cwd: &Path, args: &[String]) -> Command {
        let mut command = Command::new(&self.binary);
        command
            .args(args)
            .current_dir(cwd)
            .env_clear()
            .envs(&self.vars)
            .env("CLAUDE_CODE_DISABLE_CLAUDE_MDS", "1")
            .env("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // A group of its own, so that what it leaves running when it exits (a hook's
            // background job, a server it did not stop) can be stopped with it.
            .process_group(0)
            .kill_on_drop(true);
        command
    }

    fn common_args(&self) -> Vec<String> {
        let mut args = vec!["-p".to_string(), "--no-session-persistence".to_string()];
        if let Some(model) = &self.model {
            args.extend(["--model".to_string(), model.clone()]);
        }
        args
    }

    fn spawn(&self, cwd: &Path, args: &[String]) -> Result<Child, ModelError> {
        self.command(cwd, args).spawn().map_err(|e| {
            ModelError::NotConfigured(format!(
                "Claude Code could not be started from {} ({e}); install it (`npm install -g @anthropic-ai/claude-code`) or set its path in Settings → Model provider",
                self.binary.display()
            ))
        })
    }

    /// Feeds the prompt, then waits for `work` to read the output (stdout, stderr), bounded
    /// by the timeout and `cancel`.
    async fn drive<T>(
        &self,
        mut child: Child,
        prompt: &str,
        cancel: &Cancel,
        work: impl AsyncFnOnce(ChildStdout, ChildStderr) -> Result<T, ModelError>,
    ) -> Result<T, ModelError> {
        let mut stdin = child.stdin.take().ok_or_else(|| ModelError::Api("Claude Code's input could not be opened".into()))?;
        let stdout = child.stdout.take().ok_or_else(|| ModelError::Api("Claude Code's output could not be read".into()))?;
        let stderr = child.stderr.take().ok_or_else(|| ModelError::Api("Claude Code's errors could not be read".into()))?;
        // The group's id is Claude Code's pid. It is killed right after Claude Code is reaped,
        // before the id could come round again (pids are handed out in order up to pid_max).
        let group = child.id().and_then(|id| rustix::process::Pid::from_raw(id as i32));
        let kill_group = || {
            if let Some(pid) = group {
                let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
            }
        };
        let prompt = prompt.to_string();
        // Writing on its own task: a prompt larger than the pipe buffer would otherwise block
        // while Claude Code blocks on a full stdout nobody reads yet.
        let feeder = tokio::spawn(async move {
            let _ = stdin.write_all(prompt.as_bytes()).await;
            let _ = stdin.shutdown().await;
        });
        let work = work(stdout, stderr);
        tokio::pin!(work);
        let deadline = tokio::time::sleep(self.timeout);
        tokio::pin!(deadline);
        let outcome = tokio::select! {
            biased;
            () = cancel.cancelled() => Err(ModelError::Cancelled),
            () = &mut deadline => Err(ModelError::Timeout(self.timeout.as_secs())),
            outcome = &mut work => outcome,
            _ = child.wait() => {
                // Claude Code has exited, but a process it started may still hold its output
                // open, and the reads would wait for that process to end: stop its group, and
                // give what is left in the pipes a moment to be read.
                kill_group();
                tokio::select! {
                    biased;
                    () = cancel.cancelled() => Err(ModelError::Cancelled),
                    outcome = &mut work => outcome,
                    () = tokio::time::sleep(EXIT_GRACE) => Err(ModelError::Api(
                        "Claude Code exited, but a process it started in a session of its own kept its output open; \
                         check the hooks and MCP servers in your Claude Code settings for one that stays in the background"
                            .into(),
                    )),
                }
            }
        };
        feeder.abort();
        if outcome.is_err() {
            let _ = child.start_kill();
        }
        // Its answer is read: a Claude Code that then neither exits nor lets go (a hung
        // shutdown) gets a moment, then is stopped, so the call still ends.
        if tokio::time::timeout(EXIT_GRACE, child.wait()).await.is_err() {
            let _ = child.start_kill();
            let _ = child.wait().await;
        }
        kill_group();
        outcome
    }
}

/// The most of one answer (or one stream-json event) read from `claude`.
const MAX_OUTPUT_BYTES: u64 = 32 << 20;
/// The most of its error output read.
const MAX_ERROR_OUTPUT_BYTES: u64 = 1 << 20;
/// How long `claude` may take to exit once its answer is read.
const EXIT_GRACE: Duration = Duration::from_secs(5);

/// Error output up to [`MAX_ERROR_OUTPUT_BYTES`]; the rest is read and dropped, so `claude`
/// never stalls on a full pipe.
async fn read_capped(from: &mut (impl tokio::io::AsyncRead + Unpin), into: &mut Vec<u8>) {
    let _ = from.take(MAX_ERROR_OUTPUT_BYTES).read_to_end(into).await;
    let _ = tokio::io::copy(from, &mut tokio::io::sink()).await;
}

fn too_much_output() -> ModelError {
    ModelError::BadResponse(format!("Claude Code printed more than {} MiB for one answer; it was stopped", MAX_OUTPUT_BYTES >> 20))
}

/// Turns Claude Code's error text (`API Error: 401 …`, `Invalid API key · Please run /login`)
/// into the matching error.
fn classify_cli_error(text: &str, model: Option<&str>) -> ModelError {
    let t = text.trim();
    let lower = t.to_ascii_lowercase();
    // What Claude Code printed reaches the terminal, run logs and dream records: cut and with
    // its control characters escaped, as an HTTP endpoint's message is.
    let detail = format!("Claude Code: {}", crate::http::printable(t, 400));
    if lower.contains("invalid api key")
        || lower.contains("/login")
        || lower.contains("not logged in")
        || lower.contains("api error: 401")
        || lower.contains("authentication_error")
        || lower.contains("oauth token")
        || lower.contains("api error: 403")
    {
        ModelError::BadKey(detail)
    } else if lower.contains("api error: 404") || lower.contains("not_found_error") || lower.contains("issue with the selected model") {
        ModelError::ModelNotFound(model.unwrap_or("(Claude Code's default)").to_string())
    } else if lower.contains("api error: 429") || lower.contains("rate_limit") || lower.contains("rate limit") || lower.contains("usage limit") {
        ModelError::RateLimited(detail)
    } else if lower.contains("connection error") || lower.contains("unable to connect") || lower.contains("econnrefused") || lower.contains("fetch failed") {
        ModelError::Network(detail)
    } else if lower.contains("timed out") || lower.contains("timeout") {
        ModelError::Api(detail)
    } else if t.is_empty() {
        ModelError::Api("Claude Code exited without an answer".into())
    } else {
        ModelError::Api(detail)
    }
}

/// The one prompt a conversation becomes: a single user turn as it is, a longer text-only
/// conversation with each turn labelled. Tool blocks cannot be replayed into `claude -p`.
fn prompt_of(messages: &[Message]) -> Result<String, ModelError> {
    let text_of = |m: &Message| -> Result<String, ModelError> {
        let mut parts = Vec::new();
        for block in &m.content {
            match block {
                Block::Text { text } => parts.push(text.as_str()),
                Block::ToolUse { .. } | Block::ToolResult { .. } => {
                    return Err(ModelError::Api(
                        "the Claude Code CLI provider runs tools itself and cannot replay tool calls; use its headless agent".into(),
                    ))
                }
            }
        }
        Ok(parts.join("\n\n"))
    };
    match messages {
        [] => Err(ModelError::Api("nothing to ask: the request has no messages".into())),
        [only] if only.role == Role::User => text_of(only),
        _ => {
            let mut out = Vec::new();
            for m in messages {
                let label = match m.role {
                    Role::User => "User",
                    Role::Assistant => "Assistant",
                };
                out.push(format!("{label}:\n{}", text_of(m)?));
            }
            Ok(out.join("\n\n"))
        }
    }
}

fn usage_of(result: &Value) -> Usage {
    let n = |key: &str| result.pointer(&format!("/usage/{key}")).and_then(Value::as_u64).unwrap_or(0);
    Usage { input_tokens: n("input_tokens"), output_tokens: n("output_tokens") }
}

fn result_error(result: &Value, model: Option<&str>) -> Option<ModelError> {
    if !result.get("is_error").and_then(Value::as_bool).unwrap_or(false) {
        return None;
    }
    let subtype = result.get("subtype").and_then(Value::as_str).unwrap_or("");
    let text = result.get("result").and_then(Value::as_str).map(str::to_string).unwrap_or_else(|| {
        let errors = result.get("errors").map(Value::to_string).unwrap_or_default();
        format!("{subtype} {errors}")
    });
    // Claude Code reports the API's status beside its own wording; the status is the reliable part.
    let detail = format!("Claude Code: {}", crate::http::printable(text.trim(), 400));
    Some(match result.get("api_error_status").and_then(Value::as_u64) {
        Some(401 | 403) => ModelError::BadKey(detail),
        Some(404) => ModelError::ModelNotFound(model.unwrap_or("(Claude Code's default)").to_string()),
        Some(429) => ModelError::RateLimited(detail),
        Some(_) => ModelError::Api(detail),
        None => classify_cli_error(&text, model),
    })
}

impl Provider for ClaudeCliProvider {
    fn kind(&self) -> ProviderKind {
        ProviderKind::ClaudeCli
    }

    fn model(&self) -> &str {
        self.model.as_deref().unwrap_or("default")
    }

    fn complete<'a>(&'a self, request: &'a Request, cancel: &'a Cancel) -> BoxFuture<'a, Result<Response, ModelError>> {
        Box::pin(async move {
            if !request.tools.is_empty() {
                return Err(ModelError::Api(
                    "the Claude Code CLI provider cannot offer Mneme's tools to the model; run the task through its headless agent".into(),
                ));
            }
            let prompt = prompt_of(&request.messages)?;
            let mut args = self.common_args();
            args.extend(["--output-format".into(), "json".into(), "--tools".into(), String::new()]);
            args.extend(["--system-prompt".into(), request.system.clone()]);
            if let Some(schema) = &request.json_schema {
                args.extend(["--json-schema".into(), schema.to_string()]);
            }
            std::fs::create_dir_all(&self.workdir).map_err(|e| {
                ModelError::NotConfigured(format!("Mneme's data folder {} could not be created ({e})", self.workdir.display()))
            })?;
            let child = self.spawn(&self.workdir, &args)?;
            let model = self.model.as_deref();
            self.drive(child, &prompt, cancel, async |out: ChildStdout, mut err: ChildStderr| {
                // Both pipes at once (a full stderr pipe nobody drains would stall Claude Code),
                // each read up to a cap: a broken or hostile `claude` could print gigabytes.
                let stderr_task = tokio::spawn(async move {
                    let mut text = Vec::new();
                    read_capped(&mut err, &mut text).await;
                    text
                });
                let mut stdout = Vec::new();
                out.take(MAX_OUTPUT_BYTES + 1)
                    .read_to_end(&mut stdout)
                    .await
                    .map_err(|e| ModelError::Api(format!("reading Claude Code's output failed ({e})")))?;
                if stdout.len() as u64 > MAX_OUTPUT_BYTES {
                    return Err(too_much_output());
                }
                let stderr = stderr_task.await.unwrap_or_default();
                let (stdout, stderr) = (String::from_utf8_lossy(&stdout), String::from_utf8_lossy(&stderr));
                let result: Value = match stdout.lines().rev().find_map(|l| serde_json::from_str::<Value>(l.trim()).ok()) {
                    Some(v) if v.get("type").and_then(Value::as_str) == Some("result") => v,
                    _ => return Err(classify_cli_error(if stderr.trim().is_empty() { &stdout } else { &stderr }, model)),
                };
                if let Some(error) = result_error(&result, model) {
                    return Err(error);
                }
                // With `--json-schema` the answer is what the model passed to the StructuredOutput
                // tool; the text reply is only a fallback for a model that answered in prose.
                let text = match result.get("structured_output").filter(|v| !v.is_null()) {
                    Some(structured) => structured.to_string(),
                    None => result.get("result").and_then(Value::as_str).unwrap_or("").to_string(),
                };
                let stop_reason = match result.get("stop_reason").and_then(Value::as_str) {
                    Some("max_tokens") => StopReason::MaxTokens,
                    _ => StopReason::EndTurn,
                };
                Ok(Response { content: vec![Block::Text { text }], stop_reason, usage: usage_of(&result) })
            })
            .await
        })
    }

    fn headless(&self) -> Option<&dyn HeadlessAgent> {
        Some(self)
    }
}

/// What the stream-json events say about written files: a write counts once its tool result
/// comes back without an error, so a write Claude Code's permissions denied is not reported.
#[derive(Default)]
struct Transcript {
    pending: Vec<(String, PathBuf)>,
    written: Vec<PathBuf>,
    /// Model turns: stream-json emits one `assistant` event per content block, all carrying the
    /// id of the API message they came from, so distinct ids count the model's answers.
    message_ids: Vec<String>,
    result: Option<Value>,
}

impl Transcript {
    fn line(&mut self, line: &str, cwd: &Path) {
        let Ok(event) = serde_json::from_str::<Value>(line) else { return };
        let blocks = event.pointer("/message/content").and_then(Value::as_array);
        match event.get("type").and_then(Value::as_str) {
            Some("assistant") => {
                if let Some(id) = event.pointer("/message/id").and_then(Value::as_str) {
                    if !self.message_ids.iter().any(|seen| seen == id) {
                        self.message_ids.push(id.to_string());
                    }
                }
                for block in blocks.into_iter().flatten() {
                    let name = block.get("name").and_then(Value::as_str).unwrap_or("");
                    if block.get("type").and_then(Value::as_str) != Some("tool_use") || !WRITING_TOOLS.contains(&name) {
                        continue;
                    }
                    let path = block.pointer("/input/file_path").or_else(|| block.pointer("/input/notebook_path")).and_then(Value::as_str);
                    if let (Some(id), Some(path)) = (block.get("id").and_then(Value::as_str), path) {
                        self.pending.push((id.to_string(), cwd.join(path)));
                    }
                }
            }
            Some("user") => {
                for block in blocks.into_iter().flatten() {
                    if block.get("type").and_then(Value::as_str) != Some("tool_result") {
                        continue;
                    }
                    let id = block.get("tool_use_id").and_then(Value::as_str).unwrap_or("");
                    let Some(at) = self.pending.iter().position(|(pending, _)| pending == id) else { continue };
                    let (_, path) = self.pending.remove(at);
                    if !block.get("is_error").and_then(Value::as_bool).unwrap_or(false) && !self.written.contains(&path) {
                        self.written.push(path);
                    }
                }
            }
            Some("result") => self.result = Some(event),
            _ => {}
        }
    }
}

impl HeadlessAgent for ClaudeCliProvider {
    fn run<'a>(&'a self, task: &'a HeadlessTask, cancel: &'a Cancel) -> BoxFuture<'a, Result<HeadlessOutcome, ModelError>> {
        Box::pin(async move {
            let mut args = self.common_args();
            args.extend(["--output-format".into(), "stream-json".into(), "--verbose".into()]);
            args.extend(["--permission-mode".into(), "dontAsk".into()]);
            // One argument per rule: rules such as `Bash(git log *)` contain spaces.
            for rule in &task.allowed_tools {
                args.extend(["--allowedTools".into(), rule.clone()]);
            }
            for rule in &task.disallowed_tools {
                args.extend(["--disallowedTools".into(), rule.clone()]);
            }
            if let Some(turns) = task.max_turns {
                args.extend(["--max-turns".into(), turns.to_string()]);
            }
            if let Some(system) = &task.system {
                args.extend(["--append-system-prompt".into(), system.clone()]);
            }
            let child = self.spawn(&task.cwd, &args)?;
            let model = self.model.as_deref();
            self.drive(child, &task.prompt, cancel, async |stdout: ChildStdout, mut e: ChildStderr| {
                let stderr_task = tokio::spawn(async move {
                    let mut text = Vec::new();
                    read_capped(&mut e, &mut text).await;
                    String::from_utf8_lossy(&text).into_owned()
                });
                let mut reader = BufReader::new(stdout);
                let mut transcript = Transcript::default();
                let mut line = Vec::new();
                loop {
                    // One event per line, each read up to a cap (a file's text is one line).
                    line.clear();
                    let n = (&mut reader)
                        .take(MAX_OUTPUT_BYTES + 1)
                        .read_until(b'\n', &mut line)
                        .await
                        .map_err(|e| ModelError::Api(format!("reading Claude Code's output failed ({e})")))?;
                    if n == 0 {
                        break;
                    }
                    if line.len() as u64 > MAX_OUTPUT_BYTES {
                        return Err(too_much_output());
                    }
                    transcript.line(String::from_utf8_lossy(&line).trim_end_matches(['\n', '\r']), &task.cwd);
                }
                let stderr = stderr_task.await.unwrap_or_default();
                let Some(result) = transcript.result else {
                    return Err(classify_cli_error(&stderr, model));
                };
                // Running out of turns still leaves the files written so far; that is an outcome.
                let out_of_turns = result.get("subtype").and_then(Value::as_str) == Some("error_max_turns");
                if !out_of_turns {
                    if let Some(error) = result_error(&result, model) {
                        return Err(error);
                    }
                }
                Ok(HeadlessOutcome {
                    result: result.get("result").and_then(Value::as_str).unwrap_or("").to_string(),
                    written_paths: transcript.written,
                    turns: u32::try_from(transcript.message_ids.len()).unwrap_or(u32::MAX),
                })
            })
            .await
        })
    }
}

/// `claude` on the `PATH` of `env`, the way a shell would find it.
pub fn find_claude(env: &Environment) -> Option<PathBuf> {
    let path = env.var("PATH")?;
    std::env::split_paths(path).map(|dir| dir.join("claude")).find(|candidate| is_executable(candidate))
}

fn is_executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cli_errors_map_to_their_classes() {
        assert!(matches!(classify_cli_error("Invalid API key · Please run /login", None), ModelError::BadKey(_)));
        assert!(matches!(classify_cli_error("API Error: 429 {\"type\":\"error\"}", None), ModelError::RateLimited(_)));
        assert_eq!(classify_cli_error("API Error: 404 not_found_error model: x", Some("x")), ModelError::ModelNotFound("x".into()));
        assert!(matches!(classify_cli_error("API Error: Connection error.", None), ModelError::Network(_)));
        assert!(matches!(classify_cli_error("API Error: 400 bad", None), ModelError::Api(_)));
    }

    /// What Claude Code printed cannot drive the terminal it is shown in, nor fill a log.
    #[test]
    fn an_error_from_claude_code_is_escaped_and_cut() {
        let hostile = format!("\u{1b}]0;pwned\u{7}{}", "x".repeat(100_000));
        let result = serde_json::json!({"is_error": true, "result": hostile, "api_error_status": 500});
        let by_status = result_error(&result, None).unwrap().to_string();
        let listed = serde_json::json!({"is_error": true, "subtype": "error_during_execution", "errors": [hostile]});
        let by_list = result_error(&listed, None).unwrap().to_string();
        for e in [by_status, by_list, classify_cli_error(&hostile, None).to_string()] {
            assert!(!e.contains('\u{1b}') && !e.contains('\u{7}'), "{e:?}");
            assert!(e.contains("]0;pwned"), "{e}");
            assert!(e.len() < 700, "{} characters", e.len());
        }
    }

    #[test]
    fn one_user_turn_is_the_prompt_and_longer_conversations_are_labelled() {
        assert_eq!(prompt_of(&[Message::user_text("hi")]).unwrap(), "hi");
        let conversation = [
            Message::user_text("a"),
            Message { role: Role::Assistant, content: vec![Block::Text { text: "b".into() }] },
            Message::user_text("c"),
        ];
        assert_eq!(prompt_of(&conversation).unwrap(), "User:\na\n\nAssistant:\nb\n\nUser:\nc");
        let tool = Message { role: Role::User, content: vec![Block::ToolResult { tool_use_id: "t".into(), content: "x".into(), is_error: false }] };
        assert!(prompt_of(&[tool]).is_err());
    }

    #[test]
    fn only_writes_that_succeeded_are_reported() {
        let mut t = Transcript::default();
        let cwd = Path::new("/w");
        for line in [
            r#"{"type":"assistant","message":{"id":"m1","content":[{"type":"tool_use","id":"a","name":"Write","input":{"file_path":"/w/in.md"}},{"type":"tool_use","id":"b","name":"Write","input":{"file_path":"/out.md"}},{"type":"tool_use","id":"c","name":"Read","input":{"file_path":"/w/r.md"}}]}}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"a","content":"ok"},{"type":"tool_result","tool_use_id":"b","is_error":true,"content":"denied"},{"type":"tool_result","tool_use_id":"c","content":"x"}]}}"#,
            r#"{"type":"assistant","message":{"id":"m2","content":[{"type":"tool_use","id":"d","name":"Edit","input":{"file_path":"rel.md"}}]}}"#,
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"d","content":"ok"}]}}"#,
            "not json",
            r#"{"type":"result","subtype":"success","result":"done","num_turns":3}"#,
        ] {
            t.line(line, cwd);
        }
        assert_eq!(t.written, vec![PathBuf::from("/w/in.md"), PathBuf::from("/w/rel.md")]);
        assert_eq!(t.message_ids, ["m1", "m2"]);
        assert_eq!(t.result.unwrap()["num_turns"], 3);
    }
}

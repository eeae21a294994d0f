//! `mneme settings provider`: which model provider Mneme asks (show, set), its API key in the OS
//! keyring (`key set` reads it from stdin so it never lands in the shell history; `key clear`),
//! and a connection test.

use anyhow::{anyhow, Result};
use clap::{Args, Subcommand};
use mneme_api::{KeyState, Mneme, ProviderChoice, ProviderSettingsInput, ProviderTest, ProviderView};
use std::io::{IsTerminal, Read};

#[derive(Args)]
pub struct ProviderArgs {
    #[command(subcommand)]
    pub action: Option<ProviderCommand>,
}

#[derive(Subcommand)]
#[command(defer = true)]
pub enum ProviderCommand {
    /// Show the provider, its model, endpoint, timeout and whether a key is set (the default).
    Show {
        #[arg(long)]
        json: bool,
    },
    /// Choose the provider. Options not given keep their saved value; switching to another
    /// kind starts its model and endpoint from the kind's defaults.
    Set {
        /// offline, claude-cli, anthropic or openai (OpenAI-compatible).
        #[arg(long, value_name = "KIND")]
        kind: Option<String>,
        /// The model (empty: the kind's default).
        #[arg(long, value_name = "MODEL")]
        model: Option<String>,
        /// The endpoint, e.g. http://127.0.0.1:11434/v1 (empty: the kind's default).
        #[arg(long, value_name = "URL")]
        base_url: Option<String>,
        /// Seconds to wait for one answer (1 to 3600; Claude Code waits 600).
        #[arg(long, value_name = "SECONDS")]
        timeout: Option<u64>,
        /// The claude binary for claude-cli (empty: the one on the PATH).
        #[arg(long, value_name = "PATH")]
        claude_binary: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Store or remove the provider's API key in the OS keyring.
    Key {
        #[command(subcommand)]
        action: KeyCommand,
    },
    /// Send one tiny request with the saved settings and say whether it worked, or why not.
    Test {
        #[arg(long)]
        json: bool,
    },
}

#[derive(Subcommand)]
#[command(defer = true)]
pub enum KeyCommand {
    /// Read the key from stdin (e.g. `pbpaste | mneme settings provider key set`) and store it.
    Set,
    /// Remove the stored key.
    Clear,
}

pub fn run(mneme: &Mneme, args: ProviderArgs) -> Result<()> {
    match args.action.unwrap_or(ProviderCommand::Show { json: false }) {
        ProviderCommand::Show { json } => output(&mneme.provider_settings()?, json),
        ProviderCommand::Set { kind, model, base_url, timeout, claude_binary, json } => {
            let saved = mneme.provider_settings()?;
            let kind = match kind {
                Some(k) => ProviderChoice::parse(&k)?,
                None => saved.kind,
            };
            let same = kind == saved.kind;
            let input = ProviderSettingsInput {
                kind,
                model: model.or_else(|| saved.model.clone().filter(|_| same)),
                base_url: base_url.or_else(|| saved.base_url.clone().filter(|_| same)),
                timeout_secs: timeout.or(Some(saved.timeout_secs)),
                claude_binary: claude_binary.or_else(|| saved.claude_binary.as_ref().map(|p| p.to_string_lossy().into_owned())),
            };
            output(&mneme.set_provider_settings(&input)?, json)
        }
        ProviderCommand::Key { action: KeyCommand::Set } => {
            let key = read_key()?;
            let v = mneme.set_provider_key(Some(&key))?;
            println!("Stored the API key in the OS keyring (service {}, {}).", v.keyring_service, v.key.account.as_deref().unwrap_or(""));
            Ok(())
        }
        ProviderCommand::Key { action: KeyCommand::Clear } => {
            let v = mneme.set_provider_key(None)?;
            println!("Removed the API key from the OS keyring ({}).", v.key.account.as_deref().unwrap_or(""));
            if v.key.state == KeyState::FromEnvironment {
                println!("ANTHROPIC_API_KEY is still set in the environment and will be used.");
            }
            Ok(())
        }
        ProviderCommand::Test { json } => {
            let saved = mneme.provider_settings()?;
            let input = ProviderSettingsInput {
                kind: saved.kind,
                model: saved.model,
                base_url: saved.base_url,
                timeout_secs: Some(saved.timeout_secs),
                claude_binary: saved.claude_binary.map(|p| p.to_string_lossy().into_owned()),
            };
            let t = mneme.test_provider(&input)?;
            if json {
                println!("{}", serde_json::to_string_pretty(&t)?);
            } else {
                print_test(&t);
            }
            if t.ok {
                Ok(())
            } else {
                Err(anyhow!("{}", t.message))
            }
        }
    }
}

/// The key from stdin: one line at a terminal, everything otherwise; surrounding whitespace
/// (the trailing newline of `echo`) is not part of it.
fn read_key() -> Result<String> {
    let mut key = String::new();
    if std::io::stdin().is_terminal() {
        eprint!("Paste the API key and press Enter (it is not shown): ");
        {
            // Not shown on screen, nor kept in the terminal's scrollback or a recording of it.
            let _quiet = NoEcho::on_stdin();
            std::io::stdin().read_line(&mut key)?;
        }
        eprintln!();
    } else {
        std::io::stdin().read_to_string(&mut key)?;
    }
    let key = key.trim().to_string();
    if key.is_empty() {
        return Err(anyhow!("no key on stdin; pipe it in, e.g. `printenv MY_KEY | mneme settings provider key set`"));
    }
    Ok(key)
}

/// The terminal's echo turned off until dropped (a terminal that cannot be asked is left as
/// it is).
struct NoEcho {
    #[cfg(unix)]
    before: Option<rustix::termios::Termios>,
}

impl NoEcho {
    fn on_stdin() -> NoEcho {
        #[cfg(unix)]
        {
            use rustix::termios::{tcgetattr, tcsetattr, LocalModes, OptionalActions};
            let stdin = std::io::stdin();
            let before = tcgetattr(&stdin).ok().filter(|t| {
                let mut quiet = t.clone();
                quiet.local_modes.remove(LocalModes::ECHO);
                tcsetattr(&stdin, OptionalActions::Now, &quiet).is_ok()
            });
            NoEcho { before }
        }
        #[cfg(not(unix))]
        NoEcho {}
    }
}

impl Drop for NoEcho {
    fn drop(&mut self) {
        #[cfg(unix)]
        if let Some(before) = &self.before {
            let _ = rustix::termios::tcsetattr(std::io::stdin(), rustix::termios::OptionalActions::Now, before);
        }
    }
}

fn label(k: ProviderChoice) -> &'static str {
    match k {
        ProviderChoice::Offline => "offline (no model)",
        ProviderChoice::ClaudeCli => "claude-cli (Claude Code CLI, its own sign-in)",
        ProviderChoice::Anthropic => "anthropic (Anthropic API)",
        ProviderChoice::Openai => "openai (OpenAI-compatible endpoint)",
    }
}

fn output(v: &ProviderView, json: bool) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(v)?);
        return Ok(());
    }
    println!("Provider:  {}", label(v.kind));
    if v.kind != ProviderChoice::Offline {
        match (&v.model, &v.default_model) {
            (Some(m), _) => println!("Model:     {m}"),
            (None, Some(d)) => println!("Model:     {d} (default)"),
            (None, None) => println!("Model:     Claude Code's default"),
        }
    }
    if let Some(u) = &v.effective_base_url {
        println!("Endpoint:  {u}{}", if v.base_url.is_none() { " (default)" } else { "" });
    }
    if v.kind != ProviderChoice::Offline {
        println!("Timeout:   {} s", v.timeout_secs);
    }
    if v.kind == ProviderChoice::ClaudeCli {
        match (&v.claude_binary, &v.detected_claude_binary) {
            (Some(p), _) => println!("Claude:    {}", crate::print::safe_path(p)),
            (None, Some(p)) => println!("Claude:    {} (found on the PATH)", crate::print::safe_path(p)),
            (None, None) => println!("Claude:    not found on the PATH; set it with --claude-binary"),
        }
    }
    let key = match v.key.state {
        KeyState::NotNeeded => None,
        KeyState::Set => Some(format!("set in the OS keyring (service {})", v.keyring_service)),
        KeyState::NotSet => Some("not set; store one with: mneme settings provider key set".to_string()),
        KeyState::FromEnvironment => Some("not stored; ANTHROPIC_API_KEY from the environment is used".to_string()),
        KeyState::Unavailable => Some(format!("unknown: {}", v.key.message.as_deref().unwrap_or("the OS keyring is unavailable"))),
    };
    if let Some(k) = key {
        println!("API key:   {k}");
    }
    println!("Settings:  {}", crate::print::safe_path(&v.settings_path));
    Ok(())
}

fn print_test(t: &ProviderTest) {
    if t.ok {
        match &t.reply {
            Some(r) => println!("{} Reply: {r:?} ({} ms).", t.message, t.elapsed_ms),
            None => println!("{}", t.message),
        }
    }
}

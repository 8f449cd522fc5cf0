//! `[[server.webhooks]]`: where the server POSTs a task's state when it completes, fails, is
//! cancelled or waits for input. Plain data, checked here with the line of each problem; the
//! server delivers (`mcp_tasks_webhooks`, through the options the CLI maps this onto).

use serde::Deserialize;
use toml::Spanned;

use super::lines::Lines;
use super::problem::{ConfigError, Problem};

/// The events a webhook can ask for: the statuses a task reaches that someone may act on.
pub const WEBHOOK_EVENTS: [&str; 4] = ["completed", "failed", "cancelled", "input_required"];

/// One `[[server.webhooks]]` entry.
#[derive(Clone, PartialEq, Eq)]
pub struct Webhook {
    /// Where deliveries are POSTed: an `https://` URL (the receiver's certificate verified
    /// against the system's roots, or `ca_file`'s), or `http://`.
    pub url: String,
    /// A PEM file of the CA certificates an `https://` receiver's certificate is checked
    /// against instead of the system's (a private CA).
    pub ca_file: Option<std::path::PathBuf>,
    /// Which statuses are delivered, each of [`WEBHOOK_EVENTS`] at most once.
    pub events: Vec<String>,
    /// The HMAC-SHA256 key every delivery is signed with (`secret`, or the environment
    /// variable named by `secret_env`, read at start).
    pub secret: String,
}

impl std::fmt::Debug for Webhook {
    /// The secret is never shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Webhook").field("url", &self.url).field("events", &self.events).finish_non_exhaustive()
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawWebhook {
    url: Spanned<String>,
    events: Vec<String>,
    secret: Option<String>,
    secret_env: Option<String>,
    ca_file: Option<std::path::PathBuf>,
}

impl RawWebhook {
    pub(crate) fn check(self, lines: Lines<'_>) -> Result<Webhook, ConfigError> {
        let line = lines.of(&self.url.span());
        let url = self.url.into_inner();
        let problem = |reason: String| lines.error(line, Problem::Webhook { url: url.clone(), reason });
        let rest = url
            .strip_prefix("https://")
            .or_else(|| url.strip_prefix("http://"))
            .ok_or_else(|| problem("the url must start with https:// or http://".into()))?;
        if self.ca_file.is_some() && !url.starts_with("https://") {
            return Err(problem("ca_file is for an https:// url".into()));
        }
        let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
        if authority.is_empty() || authority.contains('@') || url.chars().any(char::is_whitespace) {
            return Err(problem("the url needs a host (and no user info or spaces)".into()));
        }
        if self.events.is_empty() {
            return Err(problem(format!("events is empty; give any of {}", WEBHOOK_EVENTS.join(", "))));
        }
        let mut events: Vec<String> = Vec::new();
        for event in self.events {
            if !WEBHOOK_EVENTS.contains(&event.as_str()) {
                return Err(problem(format!("unknown event `{event}`; the events are {}", WEBHOOK_EVENTS.join(", "))));
            }
            if !events.contains(&event) {
                events.push(event);
            }
        }
        let secret = match (self.secret, self.secret_env) {
            (Some(secret), None) => secret,
            (None, Some(variable)) => std::env::var(&variable)
                .map_err(|_| problem(format!("environment variable `{variable}` (secret_env) is not set or not UTF-8")))?,
            _ => return Err(problem("give exactly one of secret and secret_env".into())),
        };
        if secret.is_empty() {
            return Err(problem("the secret is empty".into()));
        }
        Ok(Webhook { url, events, secret, ca_file: self.ca_file })
    }
}

#[cfg(test)]
mod tests {
    use crate::Config;

    fn problem(hook: &str) -> String {
        let text = format!("[[server.webhooks]]\n{hook}\n");
        Config::parse(&text).map(|_| ()).expect_err("refused").to_string()
    }

    #[test]
    fn a_webhook_parses_with_its_events_once_each_and_hides_its_secret() {
        let config = Config::parse(
            "[[server.webhooks]]\nurl = \"http://127.0.0.1:9/hook\"\nevents = [\"failed\", \"completed\", \"failed\"]\nsecret = \"s3\"\n",
        )
        .expect("valid");
        let hook = &config.server.webhooks[0];
        assert_eq!((hook.url.as_str(), hook.events.clone(), hook.secret.as_str()), ("http://127.0.0.1:9/hook", vec!["failed".to_owned(), "completed".to_owned()], "s3"));
        assert!(!format!("{hook:?}").contains("s3"), "the secret is never shown");
        let config = Config::parse(
            "[[server.webhooks]]\nurl = \"https://hooks.example.com/h\"\nevents = [\"completed\"]\nsecret = \"s\"\nca_file = \"/etc/ca.pem\"\n",
        )
        .expect("https with a CA file");
        let hook = &config.server.webhooks[0];
        assert_eq!((hook.url.as_str(), hook.ca_file.as_deref()), ("https://hooks.example.com/h", Some(std::path::Path::new("/etc/ca.pem"))));
    }

    #[test]
    fn each_bad_webhook_is_refused_with_its_line_and_what_is_wrong() {
        let cases = [
            ("url = \"ftp://x.example/h\"\nevents = [\"failed\"]\nsecret = \"s\"", "must start with https:// or http://"),
            ("url = \"http://x/h\"\nevents = [\"failed\"]\nsecret = \"s\"\nca_file = \"/ca.pem\"", "ca_file is for an https:// url"),
            ("url = \"http:///h\"\nevents = [\"failed\"]\nsecret = \"s\"", "the url needs a host"),
            ("url = \"http://x/h\"\nevents = []\nsecret = \"s\"", "events is empty"),
            ("url = \"http://x/h\"\nevents = [\"done\"]\nsecret = \"s\"", "unknown event `done`"),
            ("url = \"http://x/h\"\nevents = [\"failed\"]", "give exactly one of secret and secret_env"),
            ("url = \"http://x/h\"\nevents = [\"failed\"]\nsecret = \"s\"\nsecret_env = \"E\"", "give exactly one of secret and secret_env"),
            ("url = \"http://x/h\"\nevents = [\"failed\"]\nsecret = \"\"", "the secret is empty"),
            (
                "url = \"http://x/h\"\nevents = [\"failed\"]\nsecret_env = \"MCP_TASKS_SURELY_UNSET_VARIABLE\"",
                "`MCP_TASKS_SURELY_UNSET_VARIABLE` (secret_env) is not set",
            ),
        ];
        for (hook, expected) in cases {
            let message = problem(hook);
            assert!(message.contains(expected) && message.contains("line 2"), "{hook}: {message}");
        }
    }
}

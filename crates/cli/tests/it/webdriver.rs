//! A small WebDriver client for the browser tests of the web view: Debian's `chromedriver`
//! driving headless `chromium`, spoken to in the W3C WebDriver protocol (JSON over HTTP).
//!
//! Hand-written on purpose: the tests need seven endpoints (session, url, element, click,
//! value, execute, screenshot), and `http_peer` already speaks HTTP/1.1; a client crate
//! (fantoccini) would add hyper-util, cookie and url handling to every test build on two
//! cores for nothing the tests use.
//!
//! Waiting for the page is event-driven: [`Browser::wait_for`] runs an async script that
//! checks a condition and re-checks it on every DOM mutation (a `MutationObserver`), bounded
//! by the driver's script timeout: no polling, no sleeps.

use std::io::{BufRead, BufReader};
use std::net::{SocketAddr, TcpListener};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::http_peer;

/// Where Debian installs them (`apt-get install chromium chromium-driver`).
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
const CHROMIUM: &str = "/usr/bin/chromium";
/// How long one wait for the page may take (below `http_peer`'s 20 s read timeout).
const SCRIPT_TIMEOUT_MS: u64 = 15_000;
/// The element reference key of the W3C protocol.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A chromedriver process with one headless Chromium session; both end when dropped.
pub(crate) struct Browser {
    driver: Child,
    addr: SocketAddr,
    session: String,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts chromedriver and a headless Chromium with a fresh profile. `None` (after saying
    /// why) when they are not installed, unless `CI=true`, where their absence fails the
    /// test: `.ci/run` installs them.
    pub(crate) fn start() -> Option<Browser> {
        if !Path::new(CHROMEDRIVER).exists() || !Path::new(CHROMIUM).exists() {
            assert!(
                std::env::var("CI").ok().as_deref() != Some("true"),
                "{CHROMEDRIVER} or {CHROMIUM} is missing on CI (apt-get install chromium chromium-driver)"
            );
            eprintln!("skipped: {CHROMEDRIVER} or {CHROMIUM} is not installed (apt-get install chromium chromium-driver)");
            return None;
        }
        // A free port for the driver: bound, read, released, then handed to it.
        let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("a free port").port();
        let mut driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .arg("--allowed-ips=127.0.0.1")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn chromedriver");
        let stdout = driver.stdout.take().expect("stdout");
        let (ready, started) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if line.contains("started successfully") {
                    let _ = ready.send(());
                }
            }
        });
        started.recv_timeout(Duration::from_secs(20)).expect("chromedriver starts");
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().expect("address");
        let profile = tempfile::tempdir().expect("a profile directory");
        let args = [
            "--headless".to_owned(),
            "--no-sandbox".to_owned(),
            "--disable-gpu".to_owned(),
            "--disable-quic".to_owned(),
            "--no-first-run".to_owned(),
            "--disable-background-networking".to_owned(),
            "--disable-component-update".to_owned(),
            "--disable-sync".to_owned(),
            "--disable-dev-shm-usage".to_owned(),
            "--window-size=1200,800".to_owned(),
            format!("--user-data-dir={}", profile.path().display()),
        ];
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": CHROMIUM, "args": args},
        }}});
        let created = call(addr, "POST", "/session", Some(&capabilities));
        let session = created["sessionId"].as_str().unwrap_or_else(|| panic!("no session: {created}")).to_owned();
        let browser = Browser { driver, addr, session, _profile: profile };
        browser.command("POST", "timeouts", Some(&json!({"script": SCRIPT_TIMEOUT_MS, "implicit": 0})));
        Some(browser)
    }

    fn command(&self, method: &str, path: &str, body: Option<&Value>) -> Value {
        call(self.addr, method, &format!("/session/{}/{path}", self.session), body)
    }

    /// Loads `url`.
    pub(crate) fn open(&self, url: &str) {
        self.command("POST", "url", Some(&json!({"url": url})));
    }

    /// Runs `script` (a function body) in the page and returns its value.
    pub(crate) fn run(&self, script: &str) -> Value {
        self.command("POST", "execute/sync", Some(&json!({"script": script, "args": []})))
    }

    /// Waits until the JavaScript expression `condition` is true in the page, re-checked on
    /// every change of the DOM; panics, naming `what`, if it is not within the script timeout.
    pub(crate) fn wait_for(&self, what: &str, condition: &str) {
        let script = format!(
            "const done = arguments[arguments.length - 1];
             const check = () => {{ try {{ return Boolean({condition}); }} catch (e) {{ return false; }} }};
             if (check()) return done(true);
             const observer = new MutationObserver(() => {{ if (check()) {{ observer.disconnect(); done(true); }} }});
             observer.observe(document, {{subtree: true, childList: true, attributes: true, characterData: true}});"
        );
        let answer = call_raw(self.addr, "POST", &format!("/session/{}/execute/async", self.session), Some(&json!({"script": script, "args": []})));
        assert!(answer.0 == 200 && answer.1["value"] == true, "waiting for {what}: {}", answer.1);
    }

    /// The element matching the CSS `selector` (it must exist).
    pub(crate) fn find(&self, selector: &str) -> String {
        let found = self.command("POST", "element", Some(&json!({"using": "css selector", "value": selector})));
        found[ELEMENT].as_str().unwrap_or_else(|| panic!("no element {selector}: {found}")).to_owned()
    }

    /// Clicks the element matching `selector`, as a user would.
    pub(crate) fn click(&self, selector: &str) {
        let element = self.find(selector);
        self.command("POST", &format!("element/{element}/click"), Some(&json!({})));
    }

    /// Types `text` into the element matching `selector`.
    pub(crate) fn type_into(&self, selector: &str, text: &str) {
        let element = self.find(selector);
        self.command("POST", &format!("element/{element}/value"), Some(&json!({"text": text})));
    }

    /// The visible text of the element matching `selector`.
    pub(crate) fn text(&self, selector: &str) -> String {
        let element = self.find(selector);
        self.command("GET", &format!("element/{element}/text"), None).as_str().unwrap_or_default().to_owned()
    }

    /// A PNG screenshot of the window, written to `path`.
    pub(crate) fn screenshot(&self, path: &Path) {
        use base64::Engine as _;
        let png = self.command("GET", "screenshot", None);
        let bytes = base64::engine::general_purpose::STANDARD.decode(png.as_str().expect("base64")).expect("a PNG");
        std::fs::write(path, bytes).expect("write the screenshot");
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        let _ = call_raw(self.addr, "DELETE", &format!("/session/{}", self.session), None);
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// A WebDriver command; its `value`, which must not be an error.
fn call(addr: SocketAddr, method: &str, path: &str, body: Option<&Value>) -> Value {
    let (status, answer) = call_raw(addr, method, path, body);
    assert_eq!(status, 200, "{method} {path}: {answer}");
    answer["value"].clone()
}

fn call_raw(addr: SocketAddr, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let text = body.map(Value::to_string);
    let headers: &[(&str, &str)] = if text.is_some() { &[("Content-Type", "application/json")] } else { &[] };
    let reply = http_peer::request_to(addr, method, path, headers, text.as_deref());
    let value = serde_json::from_str(&reply.body).unwrap_or(Value::Null);
    (reply.status, value)
}

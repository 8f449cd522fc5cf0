//! The polling limit never refuses a client that polls as it is told (issue 42): with
//! `serve`'s default `poll_rate` (50 reads per second, bursts of 100), sixty running tasks of
//! one principal, each polled at the advertised `pollInterval` for 10 s in both eras (2,400
//! reads, about 240 per second), are all served. A client that polls one task faster than
//! that still meets the limit (`hostile::hostile_polling_beyond_the_rate_…`).

use std::time::{Duration, Instant};

use serde_json::json;

use crate::harness::Workdir;
use crate::hostile::{hostile_config, modern_get};
use crate::http::{ALICE, Client, HttpServer};

#[test]
fn sixty_running_tasks_polled_at_the_advertised_interval_for_10_s_in_both_eras_are_never_refused() {
    let work = Workdir::new();
    // Room for sixty running tasks of one principal; the polling limit is serve's default.
    hostile_config(&work, "max_running_per_principal = 64");
    let server = HttpServer::start(&work);
    let mut alice = Client::new(&server, Some(ALICE));
    alice.initialize();
    let ids: Vec<String> = (0..60)
        .map(|_| {
            let created = alice.result("tools/call", json!({"name": "slow", "arguments": {"seconds": 120}, "task": {}}));
            assert_eq!(created["task"]["pollInterval"], 250, "{created}");
            created["task"]["taskId"].as_str().unwrap().to_owned()
        })
        .collect();
    let interval = Duration::from_millis(250);
    let mut last: Vec<Instant> = vec![Instant::now(); ids.len()];
    let (mut reads, mut refused) = (0, Vec::new());
    let end = Instant::now() + Duration::from_secs(10);
    let mut round = 0;
    while Instant::now() < end {
        round += 1;
        for (n, id) in ids.iter().enumerate() {
            // Each task no sooner than its pollInterval after its previous read, as told.
            let due = last[n] + interval;
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            last[n] = Instant::now();
            // Odd rounds in 2025-11-25, even ones in 2026-07-28: one principal, one pace.
            let error = if round % 2 == 1 {
                let response = alice.call("tasks/get", json!({"taskId": id}));
                response.get("error").cloned()
            } else {
                let (_, response) = modern_get(server.addr, ALICE, id);
                response.get("error").cloned()
            };
            reads += 1;
            if let Some(error) = error {
                refused.push(error);
            }
        }
    }
    assert!(reads >= 60 * 8, "polled for 10 s: {reads} reads");
    assert!(refused.is_empty(), "{} of {reads} reads refused, the first: {}", refused.len(), refused[0]);
    // Each task is still running, and polling one of them with no pause is refused in the end.
    let mut refusal = None;
    for _ in 0..200 {
        if let Some(error) = alice.call("tasks/get", json!({"taskId": ids[0]})).get("error").cloned() {
            refusal = Some(error);
            break;
        }
    }
    let refusal = refusal.expect("polling one task without a pause meets the limit");
    assert_eq!((refusal["code"].clone(), refusal["data"]["limit"].clone()), (json!(-32010), json!("poll_rate")), "{refusal}");
}

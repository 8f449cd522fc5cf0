//! The shared store suite: what every store must do, whatever its backend.
//!
//! Each case is a public async function taking the store under test, fresh and empty:
//! `Arc<dyn TaskStore>` (once or twice), or for the HTTP session records
//! `Arc<dyn SessionStore>` (twice). [`store_suite!`](crate::store_suite!) turns every case
//! into a `#[tokio::test]` in the calling crate, given an async constructor:
//!
//! ```ignore
//! // crates/sqlite/tests/it/main.rs
//! mcp_tasks_testkit::store_suite!(async {
//!     let dir = tempfile::tempdir().expect("a temporary directory");
//!     let store = SqliteStore::open(&dir.path().join("tasks.db")).expect("the store opens");
//!     (Arc::new(store), dir) // the TempDir lives as long as the test
//! });
//! ```
//!
//! The constructor yields a [`StoreFixture`]: the store itself (an `Arc` of a type that
//! implements both `TaskStore` and `SessionStore`), or the store with a guard (a temporary
//! directory, a database schema) that is dropped when the test ends, or two handles on one
//! database ([`Handles`]). The calling crate needs `tokio` (with `macros` and
//! `rt-multi-thread`) among its dependencies, since `#[tokio::test]` expands to paths under
//! `tokio`.
//!
//! # Layout: one file per store role
//! - `records` and `keys`: [`RecordStore`](mcp_tasks_engine::RecordStore) on one handle (the
//!   records, idempotency keys); `feed`: the same across two handles (cancel requests, input
//!   answers, the change feed).
//! - `claims`: [`ClaimStore`](mcp_tasks_engine::ClaimStore), on two handles (claims and
//!   leases, the retention limit, a tool's slots, the running places).
//! - `view`: [`ViewStore`](mcp_tasks_engine::ViewStore) (pages, counts, history, origin).
//! - `work`: [`WorkStore`](mcp_tasks_engine::WorkStore) (process groups, kept groups,
//!   checkpoints); `events`: its event logs (one handle and two).
//! - `sessions`: [`SessionStore`](mcp_tasks_engine::SessionStore), on two handles.
//! - `deliveries`: [`DeliveryStore`](mcp_tasks_engine::DeliveryStore) (the webhooks'
//!   deliveries), on two handles, for the stores that implement it
//!   ([`delivery_suite!`](crate::delivery_suite!)).
//! - `fixtures`: sample tasks, small builders, [`StoreFixture`].
//!
//! The cases on two handles take [`StoreFixture::store`] and [`StoreFixture::second`] (or
//! [`StoreFixture::sessions`] and [`StoreFixture::second_sessions`]): two connection pools
//! on one database for PostgreSQL, two handles on one file for SQLite (each its own
//! connections, writer, cache and node locks: what two processes are to each other), the
//! same handle twice for a store one process owns (the memory store).
//!
//! Cases that only make sense for one backend (reopening a file, pragmas) live in that
//! backend's own tests.

mod claims;
mod deliveries;
mod events;
mod feed;
mod fixtures;
mod keys;
mod records;
mod sessions;
mod view;
mod work;

pub use claims::*;
pub use deliveries::*;
pub use events::*;
pub use feed::*;
pub use fixtures::{Handles, StoreFixture, T0, TTL_MS, sample_task};
pub use keys::*;
pub use records::*;
pub use sessions::*;
pub use view::*;
pub use work::*;

/// Generates one `#[tokio::test]` per case of the store suite, each on a fresh store
/// built by the async constructor `$make` (an expression whose output is a
/// [`StoreFixture`](crate::store_suite::StoreFixture)).
///
/// The calling crate must depend on `tokio` with the `macros` and `rt-multi-thread`
/// features. Tests run on a two-thread runtime so that racing cases really race.
///
/// `store_suite!(optional: $make)` is the same for a store that may be unavailable (a database
/// server named by an environment variable): `$make` yields an `Option` of the fixture, and
/// each test returns at once, passing, on `None`. The constructor says why it skips (and
/// should refuse to skip where skipping would hide a failure, as on CI).
#[macro_export]
macro_rules! store_suite {
    (optional: $make:expr) => {
        $crate::store_suite!(@all $make.await);
    };
    (@all $fixture:expr) => {
        $crate::store_suite!(@cases $fixture;
            insert_then_get_round_trips_every_field,
            a_duplicate_id_is_rejected,
            get_of_an_unknown_id_is_none,
            replace_with_a_stale_version_is_a_conflict,
            replace_bumps_the_version_and_changes_exactly_the_update,
            of_racing_replaces_from_one_version_exactly_one_wins,
            list_pages_in_a_stable_order_with_a_cursor,
            list_returns_only_the_owners_tasks,
            count_counts_the_owners_tasks_in_every_status,
            count_stays_exact_through_duplicates_and_purges_to_zero,
            count_stays_exact_through_claimed_inserts_refusals_and_purges,
            unfinished_returns_only_working_and_input_required_tasks,
            expired_respects_now_and_skips_terminal_tasks,
            purge_deletes_only_terminal_tasks_past_expiry,
            purge_respects_its_limit,
            a_keyed_insert_returns_the_retained_task_with_that_key,
            idempotency_keys_are_per_owner,
            keyless_tasks_never_conflict,
            a_key_is_free_again_once_its_task_is_past_its_ttl,
            a_purged_task_frees_its_key,
            of_racing_keyed_inserts_exactly_one_is_new,
            a_process_group_is_recorded_with_its_task_and_goes_with_it,
            browse_pages_newest_first_with_filters,
            status_counts_follow_writes,
            a_tool_error_is_counted_browsed_and_recorded_as_failed,
            the_status_history_records_each_change_and_goes_with_its_task,
            the_history_has_answers_and_every_change_of_a_finished_task,
            an_origin_is_recorded_with_its_task_and_goes_with_it,
            an_origin_given_at_the_insert_reads_back_with_the_task,
            a_checkpoint_is_fenced_by_the_attempt_and_goes_with_its_task,
            a_kept_group_is_recorded_by_key_replaced_and_removed,
            an_event_log_numbers_appends_from_one_and_pages_after_a_cursor,
            an_event_log_prunes_its_oldest_past_its_limits_and_goes_with_its_task,
        );
        $crate::store_suite!(@pairs $fixture;
            a_claim_holds_until_its_lease_lapses_and_a_take_over_fences_the_runner,
            of_racing_claims_from_two_handles_exactly_one_wins,
            renew_extends_only_the_live_claims_of_its_node,
            unclaimed_unfinished_tasks_are_lapsed_oldest_first,
            the_retention_limit_holds_across_handles_under_racing_inserts,
            a_cancel_request_is_seen_through_the_other_handle,
            an_answer_is_stored_with_its_write_and_taken_once,
            the_change_feed_carries_the_writes_of_either_handle,
            a_tools_slots_hold_across_handles_and_free_up_by_release_lapse_or_end,
            running_places_hold_within_both_limits_and_free_up_by_release_lapse_or_end,
            of_racing_place_takers_from_two_handles_no_more_than_the_limit_hold_one,
            a_placed_insert_holds_the_running_limits_and_the_retention_limit_across_handles,
            racing_placed_inserts_hold_the_owners_running_limit_exactly_across_handles,
            racing_appends_through_two_handles_number_a_log_without_gaps,
        );
        $crate::store_suite!(@sessions $fixture;
            a_session_is_found_by_its_owner_through_either_handle_and_ended_for_both,
            idle_sessions_are_pruned_oldest_first_within_the_limit,
        );
    };
    ($make:expr) => {
        $crate::store_suite!(@all ::core::option::Option::Some($make.await));
    };
    (@sessions $fixture:expr; $($case:ident),+ $(,)?) => {
        /// The shared store suite's cases of the HTTP session records, on two handles.
        mod store_suite_sessions {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    let ::core::option::Option::Some(fixture) = $fixture else {
                        return;
                    };
                    let first = $crate::store_suite::StoreFixture::sessions(&fixture);
                    let second = $crate::store_suite::StoreFixture::second_sessions(&fixture);
                    $crate::store_suite::$case(first, second).await;
                    drop(fixture);
                }
            )+
        }
    };
    (@pairs $fixture:expr; $($case:ident),+ $(,)?) => {
        /// The shared store suite's cases of many nodes on one store, on two handles.
        mod store_suite_nodes {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    let ::core::option::Option::Some(fixture) = $fixture else {
                        return;
                    };
                    let first = $crate::store_suite::StoreFixture::store(&fixture);
                    let second = $crate::store_suite::StoreFixture::second(&fixture);
                    $crate::store_suite::$case(first, second).await;
                    drop(fixture);
                }
            )+
        }
    };
    (@cases $fixture:expr; $($case:ident),+ $(,)?) => {
        /// The shared store suite (`mcp_tasks_testkit::store_suite`), one test per case.
        mod store_suite {
            #[allow(unused_imports)]
            use super::*;
            $(
                #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $case() {
                    let ::core::option::Option::Some(fixture) = $fixture else {
                        return;
                    };
                    let store = $crate::store_suite::StoreFixture::store(&fixture);
                    $crate::store_suite::$case(store).await;
                    drop(fixture);
                }
            )+
        }
    };
}

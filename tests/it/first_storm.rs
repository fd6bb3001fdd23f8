//! The README's walk-through scenario: a one-second stall starts a storm that outlives it, a
//! reject outage of the same second does not, and a shared retry budget ends the storm.

use retrystorm::scenario::LoadOptions;

use crate::{metric, run_bundled, variant};

#[test]
fn a_stall_storms_a_reject_outage_does_not_and_a_shared_budget_fixes_it() {
    let (_, result) = run_bundled("first-storm", &LoadOptions::default());
    let get = |name: &str, path: &str| metric(variant(&result, name), path).0;

    // The stall: every replication stays in the storm, three attempts per request after it.
    assert_eq!(get("stall", "recovery.recovered_fraction"), 0.0);
    assert!(get("stall", "amplification") > 2.0);
    assert!(get("stall", "success_rate") < 0.4);
    assert!(get("stall", "server.wasted") > 0.5 * get("stall", "server.served"));

    // An outage answered at once leaves no backlog: healthy the moment it ends.
    assert_eq!(get("reject outage", "recovery.recovered_fraction"), 1.0);
    assert!(get("reject outage", "amplification") < 1.1);
    assert!(get("reject outage", "success_rate") > 0.95);

    // A shared token bucket stops the retries; the backlog drains within seconds.
    let fixed = "stall, shared budget";
    assert_eq!(get(fixed, "recovery.recovered_fraction"), 1.0);
    assert!(get(fixed, "recovery.max_recovery_s") <= 3.0);
    assert!(get(fixed, "amplification") < 1.01);
}

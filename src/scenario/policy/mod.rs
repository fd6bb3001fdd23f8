//! The settings of a call policy, each in one file: the raw type a scenario file writes (with
//! its JSON Schema words), the checked type the simulation takes, `check`, the rules between
//! them, which also writes the defaults back into the raw setting (so
//! `scenario.resolved.json` shows them), and the words report.md says of it (`sentence` for
//! the clients' policy, `phrase` for a call's). A new setting is a file here, a field in
//! `schema::RawPolicy` and in `Policy`, one line in `validate::policy` that calls its `check`
//! and one in `words` that says it.

pub mod breaker;
pub mod budget;
pub mod bulkhead;
pub mod client_rate_limiter;
pub mod fallback;
pub mod hedge;
pub mod idempotency_key;
pub mod preset;
pub mod retry;
pub mod throttle;

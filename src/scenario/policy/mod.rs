//! The settings of a call policy that each live in one file: the raw type a scenario file
//! writes (with its JSON Schema words), the checked type the simulation takes, and `check`,
//! the rules between them, which also writes the defaults back into the raw setting (so
//! `scenario.resolved.json` shows them). A new setting is a file here, a field in
//! `schema::RawPolicy` and in `Policy`, and one line in `validate::policy` that calls its
//! `check`.

pub mod breaker;
pub mod budget;
pub mod bulkhead;
pub mod hedge;
pub mod idempotency_key;
pub mod throttle;

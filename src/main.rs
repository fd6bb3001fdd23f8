//! The retrystorm binary: parse the flags, run, print the error chain, set the exit code
//! (0 ok, 1 runtime or I/O failure, 2 bad scenario or usage).

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = retrystorm::cli::Cli::parse();
    match retrystorm::cli::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            for cause in err.chain().skip(1) {
                eprintln!("  caused by: {cause}");
            }
            ExitCode::from(retrystorm::cli::exit_code(&err))
        }
    }
}

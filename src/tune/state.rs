//! A tune's state folder (`tune --state DIR`): each round's block of each candidate as a file,
//! so that an interrupted tune resumes where it stopped and the shards of a tune on a Slurm
//! array (`--shard I/K`) share their rounds. The only I/O of `tune` besides publishing.
//!
//! `DIR/tune-state.json` names the tune whose state the folder holds: the SHA-256 of the tune
//! file, its scenario file and retrystorm's version, so a folder is never read for another
//! tune or an edited one. `DIR/r<round>-c<candidate>.json` holds a block, written whole (a
//! temporary file renamed into place). With `--shard`, a process first takes the blocks of
//! its share (candidate index modulo the count), then any block no process has taken yet,
//! each by creating `r<round>-c<candidate>.claim` exclusively, and waits for the blocks others
//! took; every process takes the same decisions from the same blocks. Without `--shard`,
//! claims are ignored: a resumed tune runs every block that is missing.

use std::fs;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};

use super::file::Tune;
use super::race::{Block, Store};
use crate::metrics::{LatencyHistogram, LatencyParts, LatencyPool};

/// The file naming the tune a state folder belongs to.
const IDENTITY: &str = "tune-state.json";

/// How long a shard waits between looks for a block another shard runs.
const POLL: std::time::Duration = std::time::Duration::from_millis(100);

/// A state folder, opened for one tune.
pub struct StateDir {
    dir: PathBuf,
    identity: String,
    shard: Option<(u64, u64)>,
    faults: usize,
    measures: usize,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Identity {
    tune: String,
    identity: String,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct BlockFile {
    identity: String,
    round: usize,
    candidate: usize,
    faults: Vec<FaultPart>,
}

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FaultPart {
    values: Vec<Vec<Option<f64>>>,
    success: LatencyParts,
    failure: LatencyParts,
    truncated: u32,
}

impl StateDir {
    /// Opens (creating it if need be) the state folder `dir` for `tune`, as shard `shard`
    /// (index, count) or alone. A folder holding another tune's state is refused.
    pub fn open(dir: &Path, tune: &Tune, shard: Option<(u64, u64)>) -> anyhow::Result<StateDir> {
        fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
        let path = dir.join(IDENTITY);
        let mine = Identity {
            tune: tune.name.clone(),
            identity: tune.identity.clone(),
        };
        match fs::read(&path) {
            Ok(bytes) => {
                let theirs: Identity = serde_json::from_slice(&bytes)
                    .with_context(|| format!("{} is not a tune's state", path.display()))?;
                if theirs.identity != mine.identity {
                    bail!(
                        "{} holds the state of {} (another tune, or this one before its tune file, its scenario or retrystorm changed); give --state another folder, or remove it",
                        dir.display(),
                        if theirs.tune == mine.tune {
                            "an earlier version of this tune".to_string()
                        } else {
                            format!("the tune {:?}", theirs.tune)
                        }
                    );
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                write_whole(&path, &serde_json::to_vec_pretty(&mine)?)?;
            }
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        }
        Ok(StateDir {
            dir: dir.to_path_buf(),
            identity: mine.identity,
            shard,
            faults: tune.faults.len(),
            measures: tune.measures().len(),
        })
    }

    fn path(&self, round: usize, c: usize, ext: &str) -> PathBuf {
        self.dir.join(format!("r{round}-c{c}.{ext}"))
    }
}

/// Writes `bytes` as `path` whole: a temporary file of its own beside it (two processes, or
/// two threads, writing the same block never share one), renamed into place.
fn write_whole(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    use std::io::Write as _;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    tmp.write_all(bytes)
        .with_context(|| format!("cannot write {}", path.display()))?;
    tmp.persist(path)
        .map(drop)
        .with_context(|| format!("cannot write {}", path.display()))
}

impl Store for StateDir {
    fn load(&self, round: usize, c: usize) -> anyhow::Result<Option<Block>> {
        let path = self.path(round, c, "json");
        let bytes = match fs::read(&path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        };
        let damaged = |why: &str| {
            anyhow::anyhow!(
                "{} is damaged ({why}); remove it and it is run again",
                path.display()
            )
        };
        let file: BlockFile =
            serde_json::from_slice(&bytes).map_err(|e| damaged(&e.to_string()))?;
        if file.identity != self.identity || file.round != round || file.candidate != c {
            return Err(damaged("it belongs to another tune, round or candidate"));
        }
        if file.faults.len() != self.faults
            || file.faults.iter().any(|f| f.values.len() != self.measures)
        {
            return Err(damaged("it has another number of faults or measures"));
        }
        let mut block = Block::default();
        for f in file.faults {
            let h = |p: &LatencyParts| {
                LatencyHistogram::from_parts(p)
                    .ok_or_else(|| damaged("a latency histogram does not read"))
            };
            block.pools.push(LatencyPool {
                success: h(&f.success)?,
                failure: h(&f.failure)?,
                groups: Vec::new(),
            });
            block.values.push(f.values);
            block.truncated.push(f.truncated);
        }
        Ok(Some(block))
    }

    fn claim(&self, round: usize, c: usize) -> anyhow::Result<bool> {
        if self.shard.is_none() {
            return Ok(true);
        }
        let path = self.path(round, c, "claim");
        match fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(e).with_context(|| format!("cannot create {}", path.display())),
        }
    }

    fn save(&self, round: usize, c: usize, block: &Block) -> anyhow::Result<()> {
        let faults = (0..block.values.len())
            .map(|f| FaultPart {
                values: block.values[f].clone(),
                success: block.pools[f].success.to_parts(),
                failure: block.pools[f].failure.to_parts(),
                truncated: block.truncated[f],
            })
            .collect();
        let file = BlockFile {
            identity: self.identity.clone(),
            round,
            candidate: c,
            faults,
        };
        write_whole(&self.path(round, c, "json"), &serde_json::to_vec(&file)?)
    }

    fn wait(&self, round: usize, c: usize) -> anyhow::Result<Block> {
        loop {
            if let Some(block) = self.load(round, c)? {
                return Ok(block);
            }
            std::thread::sleep(POLL);
        }
    }

    fn mine(&self, c: usize) -> bool {
        self.shard.is_none_or(|(i, k)| c as u64 % k == i)
    }
}

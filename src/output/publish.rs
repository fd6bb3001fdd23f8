//! Putting a run's files in place: nothing lost, nothing half-written, nothing outside the
//! output folder.
//!
//! [`prepare`] runs before anything is simulated: it refuses a folder that holds anything but
//! an earlier retrystorm run, and makes sure a folder can be created beside it. [`publish`]
//! writes every file into a fresh folder beside the destination (same parent, named
//! `.<name>.retrystorm-tmp-XXXXXXXX`), syncs each file, writes `manifest.json` last (every
//! file with its size and SHA-256), syncs the folder, and only then puts it in place:
//!
//! - no folder yet (or an empty one): one `rename`;
//! - an earlier run: `renameat2(RENAME_EXCHANGE)` swaps the two folders in one step, and the
//!   earlier run, now under the temporary name, is removed. Where the file system cannot
//!   exchange, the earlier run is renamed aside to `.<name>.retrystorm-old-XXXXXXXX`, the new
//!   folder renamed in, and the old one removed: between those two renames the folder is
//!   missing, and a process killed there leaves the earlier run under the `-old-` name, which
//!   the next run into the folder puts back.
//!
//! Files are created with `O_EXCL` inside a folder retrystorm has just made, so no symbolic
//! link can redirect a write; nothing inside an output folder is ever followed. The folder
//! itself may be a symbolic link the user made: the run is then published where it points.
//!
//! Publishers into one parent folder take turns on an advisory lock on that parent, and each
//! temporary folder is locked by the process writing it, so that the leftovers of a killed
//! process (its lock died with it) can be told from a folder another run is still writing.
//! Leftovers are removed by the next run into the same folder; on a file system without locks
//! they are left alone (they are hidden, named after the folder, and never read).

use std::collections::BTreeSet;
use std::ffi::{OsStr, OsString};
use std::fs::{self, File, OpenOptions};
use std::io::{Read as _, Write as _};
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::OutputFile;

/// The file that marks a retrystorm run folder: every other file with its size and SHA-256.
pub const MANIFEST: &str = "manifest.json";

/// The part of a temporary folder's name after `.<name>`.
const TMP_TAG: &str = ".retrystorm-tmp-";
/// The part of the name of an earlier run renamed aside after `.<name>`.
const OLD_TAG: &str = ".retrystorm-old-";

/// Files retrystorm writes besides the figures.
const FILE_NAMES: [&str; 10] = [
    "summary.json",
    "timeseries.csv",
    "service-timeseries.csv",
    "replica-timeseries.csv",
    "scenario.resolved.json",
    "example-runs.csv",
    "sweep.csv",
    "latency.csv",
    "report.md",
    MANIFEST,
];

/// The stems of every figure retrystorm draws: `<stem>.png` or `.svg`, with `<stem>.csv`.
/// They are the stems of the registered figures, so a new figure is an output name at once.
pub fn figure_stems() -> impl Iterator<Item = &'static str> {
    crate::report::charts::FIGURES.iter().map(|f| f.file_stem())
}

/// Whether retrystorm writes a file of this name into an output folder (this version or an
/// earlier one).
pub fn is_output_name(name: &str) -> bool {
    if FILE_NAMES.contains(&name) {
        return true;
    }
    let Some((stem, ext)) = name.rsplit_once('.') else {
        return false;
    };
    matches!(ext, "png" | "svg" | "csv") && figure_stems().any(|s| s == stem)
}

/// Whether `name` is one plain file name: not empty, not `.` or `..`, no `/`, `\` or NUL.
pub fn is_plain_name(name: &str) -> bool {
    !name.is_empty() && name != "." && name != ".." && !name.contains(['/', '\\', '\0'])
}

/// A destination that retrystorm will not replace, and why; nothing was touched.
#[derive(Debug, thiserror::Error)]
#[error(
    "refusing to write into {}: {reason}. retrystorm replaces an output folder as a whole, so it writes only into a new or empty folder or over an earlier retrystorm run; choose another folder (--out) or move those files away",
    dir.display()
)]
pub struct Refused {
    /// The folder as the user named it.
    pub dir: PathBuf,
    /// What is in the way.
    pub reason: String,
}

fn refused(dir: &Path, reason: impl Into<String>) -> anyhow::Error {
    Refused {
        dir: dir.to_path_buf(),
        reason: reason.into(),
    }
    .into()
}

/// The write was abandoned because [`Options::cancelled`] said so; the temporary folder is
/// gone and the destination untouched.
#[derive(Debug, thiserror::Error)]
#[error("the output was abandoned before it was complete; the output folder is as it was")]
pub struct Cancelled;

/// One file in a [`Manifest`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManifestEntry {
    /// File name inside the folder.
    pub name: String,
    /// Size in bytes.
    pub bytes: u64,
    /// SHA-256 of the contents, lowercase hex.
    pub sha256: String,
}

/// `manifest.json`: what makes a folder a retrystorm run, written last.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// The retrystorm version that wrote the folder.
    pub retrystorm: String,
    /// The run's identity: [`run_id`] of its scenario.resolved.json and summary.json. A
    /// re-rendered report keeps it; another run has another.
    pub run_id: String,
    /// Every other file in the folder, by name.
    pub files: Vec<ManifestEntry>,
}

/// SHA-256 of `bytes`, lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02x}");
    }
    out
}

/// A run's identity: the SHA-256 of the line `scenario.resolved.json <its sha256>` and the
/// line `summary.json <its sha256>`, each ending in a newline.
pub fn run_id(resolved_sha256: &str, summary_sha256: &str) -> String {
    sha256_hex(
        format!("scenario.resolved.json {resolved_sha256}\nsummary.json {summary_sha256}\n")
            .as_bytes(),
    )
}

fn is_sha256(text: &str) -> bool {
    text.len() == 64 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

impl Manifest {
    /// The manifest of `files` (which must hold scenario.resolved.json and summary.json, or,
    /// for a shard folder, shard.json, or for a tune's folder tune.json).
    pub fn of(files: &[OutputFile]) -> anyhow::Result<Manifest> {
        let mut entries: Vec<ManifestEntry> = files
            .iter()
            .map(|f| ManifestEntry {
                name: f.name.clone(),
                bytes: f.bytes.len() as u64,
                sha256: sha256_hex(&f.bytes),
            })
            .collect();
        entries.sort_by(|a, b| a.name.cmp(&b.name));
        let digest = |name: &str| -> anyhow::Result<String> {
            entries
                .iter()
                .find(|e| e.name == name)
                .map(|e| e.sha256.clone())
                .with_context(|| format!("a run folder needs {name}"))
        };
        // A shard folder (see `shard`) has shard.json where a run has summary.json.
        let run_id = if entries.iter().any(|e| e.name == "summary.json") {
            run_id(&digest("scenario.resolved.json")?, &digest("summary.json")?)
        } else if entries.iter().any(|e| e.name == "shard.json") {
            sha256_hex(
                format!(
                    "scenario.resolved.json {}\nshard.json {}\n",
                    digest("scenario.resolved.json")?,
                    digest("shard.json")?
                )
                .as_bytes(),
            )
        } else if entries.iter().any(|e| e.name == TUNE_INFO) {
            // A tune's folder: tune.json records the search and everything found.
            sha256_hex(format!("{TUNE_INFO} {}\n", digest(TUNE_INFO)?).as_bytes())
        } else {
            run_id(&digest("scenario.resolved.json")?, &digest("summary.json")?)
        };
        Ok(Manifest {
            retrystorm: env!("CARGO_PKG_VERSION").to_string(),
            run_id,
            files: entries,
        })
    }

    /// Reads a manifest, checking its shape: plain, distinct file names and SHA-256 digests.
    pub fn parse(bytes: &[u8]) -> anyhow::Result<Manifest> {
        let manifest: Manifest = serde_json::from_slice(bytes)?;
        if !is_sha256(&manifest.run_id) {
            bail!("run_id is not a SHA-256 in hex");
        }
        let mut seen = BTreeSet::new();
        for e in &manifest.files {
            if !is_plain_name(&e.name) || e.name == MANIFEST {
                bail!(
                    "it lists {:?}, which is not a file name in the folder",
                    e.name
                );
            }
            if !seen.insert(e.name.as_str()) {
                bail!("it lists {:?} twice", e.name);
            }
            if !is_sha256(&e.sha256) {
                bail!("the sha256 of {:?} is not a SHA-256 in hex", e.name);
            }
        }
        Ok(manifest)
    }

    /// The entry for `name`, if listed.
    pub fn entry(&self, name: &str) -> Option<&ManifestEntry> {
        self.files.iter().find(|e| e.name == name)
    }

    /// The bytes of the manifest as written: pretty JSON with a final newline.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec_pretty(self).expect("a manifest serialises");
        bytes.push(b'\n');
        bytes
    }
}

/// Reads a regular file without following a symbolic link (and without blocking on a FIFO).
pub fn read_regular_file(path: &Path) -> std::io::Result<Vec<u8>> {
    let flags = rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK;
    let mut file = OpenOptions::new()
        .read(true)
        .custom_flags(flags.bits() as i32)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    file.read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// What a destination holds now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Existing {
    /// Nothing by that name.
    Missing,
    /// An empty folder.
    Empty,
    /// A retrystorm run: with a manifest, or written by an earlier version (summary.json,
    /// scenario.resolved.json and only names retrystorm writes).
    Run,
    /// A shard of a sharded run: its manifest lists [`SHARD_INFO`].
    Shard,
    /// A tune's folder: its manifest lists [`TUNE_INFO`].
    Tune,
}

/// The file that makes a folder a shard of a sharded run (`run --shard`).
pub const SHARD_INFO: &str = "shard.json";

/// The file that makes a folder a tune's (`retrystorm tune`).
pub const TUNE_INFO: &str = "tune.json";

/// The kind of folder a command writes: a run (`run`, `merge`, `report`) or a shard
/// (`run --shard`). A command replaces only a folder of its own kind, so that a run never
/// replaces a shard (a merge's own input, say) and a shard never a finished run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A run's output folder.
    Run,
    /// A shard folder.
    Shard,
    /// A tune's folder.
    Tune,
}

impl Existing {
    /// Why a folder of `kind` may not replace this one, if it may not.
    fn refuses(self, kind: Kind) -> Option<&'static str> {
        match (self, kind) {
            (Existing::Shard, Kind::Run) => Some(
                "it holds a shard of a sharded run (shard.json), and a run or a merge never replaces a shard; give --out another folder, or remove the shard if it is no longer needed",
            ),
            (Existing::Run, Kind::Shard) => Some(
                "it holds a finished run, and a shard never replaces a run; give --out another folder, or remove the run if it is no longer needed",
            ),
            (Existing::Tune, Kind::Run | Kind::Shard) => Some(
                "it holds a tune's results (tune.json), and a run never replaces them; give --out another folder, or remove the tune's folder if it is no longer needed",
            ),
            (Existing::Run | Existing::Shard, Kind::Tune) => Some(
                "it holds a run or a shard, and a tune never replaces one; give --out another folder, or remove it if it is no longer needed",
            ),
            _ => None,
        }
    }
}

/// The names in folder `path`, each a regular file; a link, a folder or a name that is not
/// UTF-8 is refused.
fn file_names(path: &Path, shown: &Path) -> anyhow::Result<Vec<String>> {
    let mut names = Vec::new();
    let entries = fs::read_dir(path).with_context(|| format!("cannot list {}", shown.display()))?;
    for entry in entries {
        let entry = entry.with_context(|| format!("cannot list {}", shown.display()))?;
        let name = entry.file_name();
        let Some(name) = name.to_str() else {
            return Err(refused(
                shown,
                format!("it holds {name:?}, which retrystorm did not write"),
            ));
        };
        let kind = entry
            .file_type()
            .with_context(|| format!("cannot inspect {}", shown.join(name).display()))?;
        if !kind.is_file() {
            let what = if kind.is_symlink() {
                "a symbolic link"
            } else if kind.is_dir() {
                "a folder"
            } else {
                "a special file"
            };
            return Err(refused(
                shown,
                format!("it holds {name}, {what}; retrystorm writes only plain files there"),
            ));
        }
        names.push(name.to_string());
    }
    names.sort();
    Ok(names)
}

/// What `path` holds, refusing anything but nothing, an empty folder or a retrystorm run.
/// `shown` is the path in messages.
pub fn inspect(path: &Path, shown: &Path) -> anyhow::Result<Existing> {
    let meta = match fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Existing::Missing),
        Err(e) => return Err(e).with_context(|| format!("cannot inspect {}", shown.display())),
        Ok(meta) => meta,
    };
    if meta.file_type().is_symlink() {
        return Err(refused(shown, "it is a symbolic link"));
    }
    if !meta.is_dir() {
        return Err(refused(shown, "it is a file, not a folder"));
    }
    let names = file_names(path, shown)?;
    if names.is_empty() {
        return Ok(Existing::Empty);
    }
    let manifest = if names.iter().any(|n| n == MANIFEST) {
        let bytes = read_regular_file(&path.join(MANIFEST))
            .with_context(|| format!("cannot read {}", shown.join(MANIFEST).display()))?;
        Some(Manifest::parse(&bytes).map_err(|e| {
            refused(
                shown,
                format!("its manifest.json is not a retrystorm manifest ({e})"),
            )
        })?)
    } else {
        None
    };
    for name in &names {
        let listed = manifest.as_ref().is_some_and(|m| m.entry(name).is_some());
        if !listed && !is_output_name(name) {
            return Err(refused(
                shown,
                format!("it holds {name}, which retrystorm did not write"),
            ));
        }
    }
    if manifest.is_none()
        && !(names.iter().any(|n| n == "summary.json")
            && names.iter().any(|n| n == "scenario.resolved.json"))
    {
        return Err(refused(
            shown,
            "it holds files named like retrystorm's but neither a manifest.json nor summary.json and scenario.resolved.json, so it is not a retrystorm run",
        ));
    }
    if manifest
        .as_ref()
        .is_some_and(|m| m.entry(SHARD_INFO).is_some())
    {
        return Ok(Existing::Shard);
    }
    if manifest.is_some_and(|m| m.entry(TUNE_INFO).is_some()) {
        return Ok(Existing::Tune);
    }
    Ok(Existing::Run)
}

/// Where a run goes, checked by [`prepare`].
#[derive(Debug, Clone)]
pub struct Destination {
    /// The folder as the user named it, for messages.
    shown: PathBuf,
    /// The folder: absolute, its parent's links resolved, its own link (if it was one)
    /// followed.
    path: PathBuf,
    /// The folder it goes in.
    parent: PathBuf,
    /// Its name in `parent`.
    name: OsString,
    /// The kind of folder written there.
    kind: Kind,
}

impl Destination {
    /// What the folder holds now ([`inspect`]), refusing a folder of another kind.
    fn inspect(&self) -> anyhow::Result<Existing> {
        let existing = inspect(&self.path, &self.shown)?;
        match existing.refuses(self.kind) {
            Some(why) => Err(refused(&self.shown, why)),
            None => Ok(existing),
        }
    }

    /// The folder as the user named it.
    pub fn shown(&self) -> &Path {
        &self.shown
    }

    /// The folder's real path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn tag(&self, tag: &str) -> OsString {
        let mut prefix = OsString::from(".");
        prefix.push(&self.name);
        prefix.push(tag);
        prefix
    }
}

/// The parent folder and name of an absolute path, refusing one that names no folder (`/`,
/// a path ending in `..`).
fn split(path: &Path, shown: &Path) -> anyhow::Result<(PathBuf, OsString)> {
    match (path.parent(), path.file_name()) {
        (Some(parent), Some(name)) => Ok((parent.to_path_buf(), name.to_os_string())),
        _ => Err(refused(
            shown,
            "it names no folder retrystorm can create or replace",
        )),
    }
}

/// The place `dir` names, for telling whether two destinations are one: absolute, with the
/// links of the part that exists resolved and `.`/`..` of the rest applied. Touches nothing.
pub fn identity(dir: &Path) -> PathBuf {
    let Ok(abs) = std::path::absolute(dir) else {
        return dir.to_path_buf();
    };
    let mut existing = abs.clone();
    let mut rest: Vec<OsString> = Vec::new();
    loop {
        if let Ok(mut real) = fs::canonicalize(&existing) {
            for part in rest.iter().rev() {
                if part == ".." {
                    real.pop();
                } else {
                    real.push(part);
                }
            }
            return real;
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_os_string());
                existing = parent.to_path_buf();
            }
            _ => return abs,
        }
    }
}

/// An advisory lock on a folder, held until dropped; `None` where the file system has none.
struct FolderLock(Option<File>);

/// How long a run waits for another to finish putting its folder in place (which takes a
/// moment) before it gives up.
const LOCK_PATIENCE: std::time::Duration = std::time::Duration::from_secs(60);

impl FolderLock {
    /// Waits for the lock on `dir`, asking `cancelled` while it waits (a blocked lock would not
    /// let a signal through). A file system without locks gives an empty lock.
    fn wait(dir: &Path, cancelled: &dyn Fn() -> bool) -> anyhow::Result<FolderLock> {
        let Ok(file) = File::open(dir) else {
            return Ok(FolderLock(None));
        };
        let started = std::time::Instant::now();
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(FolderLock(Some(file))),
                Err(std::fs::TryLockError::WouldBlock) => {}
                Err(std::fs::TryLockError::Error(_)) => return Ok(FolderLock(None)),
            }
            if cancelled() {
                return Err(Cancelled.into());
            }
            if started.elapsed() > LOCK_PATIENCE {
                bail!(
                    "another retrystorm has been writing in {} for over a minute; try again when it is done",
                    dir.display()
                );
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// Takes the lock on `dir` if nobody holds it.
    fn try_take(dir: &Path) -> FolderLock {
        FolderLock(File::open(dir).ok().filter(|f| f.try_lock().is_ok()))
    }

    fn held(&self) -> bool {
        self.0.is_some()
    }
}

/// Checks a destination before anything is simulated: `dir` must be missing, empty or hold
/// a retrystorm run ([`Refused`] otherwise, nothing touched), its parent must exist or be
/// creatable, and a folder must be creatable in it. Removes what killed runs into `dir` left
/// behind (see the module's documentation). While another run holds the parent's lock it
/// waits, asking `cancelled` ([`Cancelled`] when it says so). A folder of another [`Kind`]
/// than `kind` is refused.
pub fn prepare(
    dir: &Path,
    kind: Kind,
    cancelled: &dyn Fn() -> bool,
) -> anyhow::Result<Destination> {
    let abs = std::path::absolute(dir)
        .with_context(|| format!("cannot locate the output folder {}", dir.display()))?;
    let (mut parent, mut name) = split(&abs, dir)?;
    let reserved = |name: &OsStr| {
        [TMP_TAG, OLD_TAG].iter().any(|tag| {
            name.as_bytes()
                .windows(tag.len())
                .any(|w| w == tag.as_bytes())
        })
    };
    if reserved(&name) {
        return Err(refused(
            dir,
            "its name is one retrystorm gives its temporary folders",
        ));
    }
    // The output folder may be a link the user made (output -> a larger disk): the run goes
    // where it points. Links inside the folder are never followed.
    if fs::symlink_metadata(&abs).is_ok_and(|m| m.file_type().is_symlink()) {
        let real = fs::canonicalize(&abs).map_err(|e| {
            refused(
                dir,
                format!("it is a symbolic link to nothing that exists ({e})"),
            )
        })?;
        (parent, name) = split(&real, dir)?;
    }
    fs::create_dir_all(&parent)
        .with_context(|| format!("cannot create the folder {}", parent.display()))?;
    let parent = fs::canonicalize(&parent)
        .with_context(|| format!("cannot locate the folder {}", parent.display()))?;
    let dest = Destination {
        shown: dir.to_path_buf(),
        path: parent.join(&name),
        parent,
        name,
        kind,
    };
    let lock = FolderLock::wait(&dest.parent, cancelled)?;
    clean_leftovers(&dest, &lock);
    let existing = dest.inspect()?;
    // A folder can be made beside it (the publish writes one there) ...
    let probe = staging_locked(&dest)
        .with_context(|| format!("cannot write in {}", dest.parent.display()))?;
    drop(probe);
    // ... and the earlier run can be removed once replaced.
    if existing != Existing::Missing {
        rustix::fs::access(&dest.path, rustix::fs::Access::WRITE_OK)
            .map_err(std::io::Error::from)
            .with_context(|| format!("cannot replace {}", dest.shown.display()))?;
    }
    Ok(dest)
}

/// A fresh temporary folder beside the destination, locked by this process.
struct Staging {
    dir: tempfile::TempDir,
    _lock: FolderLock,
}

fn staging(dest: &Destination, cancelled: &dyn Fn() -> bool) -> anyhow::Result<Staging> {
    let _parent = FolderLock::wait(&dest.parent, cancelled)?;
    let stage = staging_locked(dest).with_context(|| {
        format!(
            "cannot create a temporary folder in {}",
            dest.parent.display()
        )
    })?;
    keep_attributes(&dest.path, stage.dir.path());
    Ok(stage)
}

/// Gives the temporary folder `stage` the group and mode (setgid bit included) of the folder
/// `dest` it will replace, if there is one, before any file is written into it: replacing a
/// folder a team shares keeps it shared, and the files inherit its group as they would have.
/// Best effort: a group the user is not in stays the user's.
fn keep_attributes(dest: &Path, stage: &Path) {
    use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
    let Ok(meta) = fs::symlink_metadata(dest) else {
        return;
    };
    if !meta.is_dir() {
        return;
    }
    let _ = std::os::unix::fs::chown(stage, None, Some(meta.gid()));
    let _ = fs::set_permissions(stage, fs::Permissions::from_mode(meta.mode() & 0o7777));
}

/// [`staging`] with the parent's lock already held (by this very handle: a second lock on the
/// same folder would wait for the first), so that no cleaner sees the folder before it is
/// locked.
fn staging_locked(dest: &Destination) -> std::io::Result<Staging> {
    let dir = tempfile::Builder::new()
        .prefix(&dest.tag(TMP_TAG))
        .rand_bytes(8)
        .tempdir_in(&dest.parent)?;
    let lock = FolderLock::try_take(dir.path());
    Ok(Staging { dir, _lock: lock })
}

/// Removes the temporary folders of killed runs into `dest` and puts back an earlier run
/// that a killed run had renamed aside. Only with the parent's lock held: without locks a
/// leftover cannot be told from a folder that another run is writing.
fn clean_leftovers(dest: &Destination, parent_lock: &FolderLock) {
    if !parent_lock.held() {
        return;
    }
    let Ok(entries) = fs::read_dir(&dest.parent) else {
        return;
    };
    let (tmp, old) = (dest.tag(TMP_TAG), dest.tag(OLD_TAG));
    let mut olds = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        if !is_dir {
            continue;
        }
        if name.as_bytes().starts_with(tmp.as_bytes()) {
            // Locked: a live process is writing it. Unlocked: its writer is gone.
            if FolderLock::try_take(&entry.path()).held() {
                let _ = fs::remove_dir_all(entry.path());
            }
        } else if name.as_bytes().starts_with(old.as_bytes()) {
            // Only ever present between two renames made under the parent's lock, which we
            // hold: its writer is gone.
            olds.push(entry.path());
        }
    }
    for path in olds {
        let missing = fs::symlink_metadata(&dest.path).is_err();
        if missing && fs::rename(&path, &dest.path).is_ok() {
            continue;
        }
        let _ = fs::remove_dir_all(&path);
    }
}

/// How [`publish`] behaves; the default suits the command line.
pub struct Options<'a> {
    /// Asked before each file and before the folder is put in place: `true` abandons the
    /// write ([`Cancelled`]), leaving the destination as it was.
    pub cancelled: &'a dyn Fn() -> bool,
    /// Replace an earlier run with one atomic exchange where the file system can (the
    /// default); `false` always takes the two renames (for tests of that path).
    pub exchange: bool,
}

impl Default for Options<'_> {
    fn default() -> Self {
        Options {
            cancelled: &|| false,
            exchange: true,
        }
    }
}

/// Writes `files` and their manifest as the folder `dest`, replacing an earlier run there as
/// a whole: afterwards the folder holds exactly these files, or (on any error, or when
/// cancelled) it is as it was and no temporary folder is left.
pub fn publish(dest: &Destination, files: &[OutputFile], options: &Options) -> anyhow::Result<()> {
    let mut names = BTreeSet::new();
    for f in files {
        if !is_plain_name(&f.name) || f.name == MANIFEST || !names.insert(f.name.as_str()) {
            bail!("cannot write {:?} into an output folder", f.name);
        }
    }
    let manifest = Manifest::of(files)?;
    let stage = staging(dest, options.cancelled)?;
    let dir = stage.dir.path();
    let write = |name: &str, bytes: &[u8]| -> anyhow::Result<()> {
        let path = dir.join(name);
        // create_new: O_EXCL, which never follows a link.
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .with_context(|| format!("cannot create {}", path.display()))?;
        file.write_all(bytes)
            .and_then(|()| file.sync_all())
            .with_context(|| format!("cannot write {}", path.display()))
    };
    for f in files {
        if (options.cancelled)() {
            return Err(Cancelled.into());
        }
        write(&f.name, &f.bytes)?;
    }
    write(MANIFEST, &manifest.to_bytes())?;
    sync_folder(dir)?;
    if (options.cancelled)() {
        return Err(Cancelled.into());
    }

    // Put it in place, taking turns with other publishers into the same parent.
    let _lock = FolderLock::wait(&dest.parent, options.cancelled)?;
    let fail = |what: &str| format!("cannot {what} {}", dest.shown.display());
    match dest.inspect()? {
        Existing::Missing => {
            fs::rename(dir, &dest.path).with_context(|| fail("create"))?;
            let _ = stage.dir.keep();
        }
        Existing::Empty | Existing::Run | Existing::Shard | Existing::Tune => {
            let exchanged = options.exchange
                && rustix::fs::renameat_with(
                    rustix::fs::CWD,
                    dir,
                    rustix::fs::CWD,
                    &dest.path,
                    rustix::fs::RenameFlags::EXCHANGE,
                )
                .is_ok();
            if exchanged {
                // The temporary name now holds the earlier run.
                let old = stage.dir.keep();
                let _ = fs::remove_dir_all(old);
            } else {
                let mut old = dest.tag(OLD_TAG);
                let suffix = dir.file_name().map_or(&b""[..], |n| {
                    &n.as_bytes()[dest.tag(TMP_TAG).len().min(n.len())..]
                });
                old.push(OsStr::from_bytes(suffix));
                let old = dest.parent.join(old);
                fs::rename(&dest.path, &old).with_context(|| fail("move aside"))?;
                if let Err(e) = fs::rename(dir, &dest.path) {
                    let _ = fs::rename(&old, &dest.path);
                    return Err(e).with_context(|| fail("replace"));
                }
                let _ = stage.dir.keep();
                let _ = fs::remove_dir_all(&old);
            }
        }
    }
    sync_folder(&dest.parent)?;
    Ok(())
}

fn sync_folder(dir: &Path) -> anyhow::Result<()> {
    File::open(dir)
        .and_then(|f| f.sync_all())
        .with_context(|| format!("cannot sync {}", dir.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_figure_stem_in_the_charts_is_an_output_name() {
        let stems: Vec<&str> = figure_stems().collect();
        assert!(stems.len() >= 15, "{stems:?}");
        assert_eq!(
            stems.iter().collect::<BTreeSet<_>>().len(),
            stems.len(),
            "no two figures share a stem: {stems:?}"
        );
        for stem in stems {
            for ext in ["png", "svg", "csv"] {
                assert!(is_output_name(&format!("{stem}.{ext}")));
            }
        }
        assert!(!is_output_name("notes.txt"));
        assert!(!is_output_name("comparison.txt"));
        assert!(!is_output_name("data.csv"));
    }

    #[test]
    fn plain_names_stay_in_the_folder() {
        for bad in ["", ".", "..", "a/b", "../x", "a\\b", "a\0b"] {
            assert!(!is_plain_name(bad), "{bad:?}");
        }
        assert!(is_plain_name("summary.json"));
        assert!(is_plain_name(".hidden"));
    }

    #[test]
    fn the_run_id_depends_on_both_files() {
        let a = sha256_hex(b"a");
        let b = sha256_hex(b"b");
        assert_ne!(run_id(&a, &b), run_id(&b, &a));
        assert_eq!(run_id(&a, &b), run_id(&a, &b));
        assert!(is_sha256(&run_id(&a, &b)));
        // The SHA-256 of "abc", from FIPS 180-2.
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn a_manifest_round_trips_and_bad_ones_are_refused() {
        let files = vec![
            OutputFile {
                name: "summary.json".into(),
                bytes: b"{}".to_vec(),
            },
            OutputFile {
                name: "scenario.resolved.json".into(),
                bytes: b"[]".to_vec(),
            },
        ];
        let m = Manifest::of(&files).unwrap();
        assert_eq!(m.files[0].name, "scenario.resolved.json", "sorted by name");
        assert_eq!(Manifest::parse(&m.to_bytes()).unwrap(), m);
        let mut bad = m.clone();
        bad.files[0].name = "../escape".into();
        assert!(Manifest::parse(&bad.to_bytes()).is_err());
        let mut bad = m.clone();
        bad.files.push(bad.files[0].clone());
        assert!(Manifest::parse(&bad.to_bytes()).is_err());
        let mut bad = m;
        bad.files[0].sha256 = "xyz".into();
        assert!(Manifest::parse(&bad.to_bytes()).is_err());
        assert!(Manifest::of(&files[..1]).is_err(), "a run needs both files");
    }
}

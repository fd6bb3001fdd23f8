#!/usr/bin/env bash
# Submits a retrystorm sweep to Slurm: an array job of SHARDS shards (sweep.sbatch) and a merge
# job (merge.sbatch) that starts once every shard has succeeded. Prints the job ids and where
# the result lands; it does not wait.
#
#   examples/slurm/submit.sh SCENARIO OUT [SHARDS [SBATCH_OPTION...]]
#
# OUT must be on a file system every node sees, and must not hold shards of an earlier sweep.
# RETRYSTORM names the binary (default: retrystorm on PATH); it must be reachable at the same
# path on the nodes. SBATCH_OPTIONs (say --partition=short --time=2:00:00 --cpus-per-task=4)
# go to both jobs, as do sbatch's own environment variables (SBATCH_PARTITION, SBATCH_ACCOUNT,
# ...).
set -euo pipefail

if (($# < 2)); then
    echo "usage: $0 SCENARIO OUT [SHARDS [SBATCH_OPTION...]]   (SHARDS defaults to 4)" >&2
    exit 2
fi
HERE=$(cd -- "$(dirname -- "$0")" && pwd)
for arg in "$1" "$2"; do
    if [[ -z $arg ]]; then
        echo "$0: SCENARIO and OUT must not be empty" >&2
        exit 2
    elif [[ $arg == -* ]]; then
        echo "$0: '$arg' starts with '-', which commands take for an option: write it as ./$arg" >&2
        exit 2
    fi
done
SHARDS=${3:-4}
EXTRA=("${@:4}")
if ! [[ $SHARDS =~ ^[1-9][0-9]*$ ]]; then
    echo "$0: SHARDS must be a whole number of at least 1, not '$SHARDS'" >&2
    exit 2
fi

RETRYSTORM=${RETRYSTORM:-retrystorm}
if ! RETRYSTORM=$(command -v "$RETRYSTORM"); then
    echo "$0: no retrystorm binary '${RETRYSTORM}': put it on PATH or set RETRYSTORM" >&2
    exit 2
fi
[[ $RETRYSTORM == /* ]] || RETRYSTORM=$PWD/$RETRYSTORM

[[ -f $1 ]] || { echo "$0: no scenario file '$1'" >&2; exit 2; }
SCENARIO=$(cd -- "$(dirname -- "$1")" && pwd)/$(basename -- "$1")
mkdir -p -- "$2"
OUT=$(cd -- "$2" && pwd)
shopt -s nullglob
old=("$OUT"/shard-* "$OUT"/resul[t])
if ((${#old[@]})); then
    echo "$0: $OUT already holds ${old[0]##*/}: give a new folder, or remove the earlier sweep's shards and result" >&2
    exit 2
fi

# A bad scenario fails here, not in every array task.
"$RETRYSTORM" check "$SCENARIO" >/dev/null

mkdir -p "$OUT/logs"
export SCENARIO OUT RETRYSTORM
sweep=$(env -u SHARDS sbatch --parsable --export=ALL --array="0-$((SHARDS - 1))" \
    --output="$OUT/logs/shard-%a.out" "${EXTRA[@]}" "$HERE/sweep.sbatch")
sweep=${sweep%%;*}
merge=$(sbatch --parsable --export=ALL --dependency="afterok:$sweep" \
    --output="$OUT/logs/merge.out" "${EXTRA[@]}" "$HERE/merge.sbatch")
merge=${merge%%;*}

echo "sweep job $sweep: $SHARDS shards, into $OUT/shard-0 ... $OUT/shard-$((SHARDS - 1)) (logs: $OUT/logs/shard-N.out)"
echo "merge job $merge: starts when every shard has succeeded, writes $OUT/result (log: $OUT/logs/merge.out)"
echo "progress: squeue -j $sweep,$merge    details: scontrol show job $sweep"

#!/bin/bash
# Queues smtlab-study.sbatch on the nodes asked for and smtlab-merge.sbatch after it;
# prints both job ids (`study=ID merge=ID`).
#
#   SMTLAB_FLEET_DIR=/shared/smtlab-fleet contrib/slurm/submit.sh [SBATCH OPTIONS] [-- STUDY OPTIONS]
#   SMTLAB_FLEET_DIR=/shared/smtlab-fleet contrib/slurm/submit.sh --nodes=16 --partition=batch -- --budget 10m
#
# SBATCH OPTIONS go to the study job (nodes, partition, account, time limit); STUDY OPTIONS
# to each node's `smtlab study`. The merge job gets the same --partition=, --account= and
# --qos= (given in that one-word form).
set -euo pipefail
: "${SMTLAB_FLEET_DIR:?set SMTLAB_FLEET_DIR to a directory every node can write (a shared file system)}"
here=$(cd "$(dirname "$0")" && pwd)
sbatch_args=()
merge_args=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
  sbatch_args+=("$1")
  case "$1" in
    --partition=* | --account=* | --qos=*) merge_args+=("$1") ;;
  esac
  shift
done
[ "${1-}" = "--" ] && shift
# A job's command line is shown to every user by `scontrol show job` and `squeue`: a
# database password there is a password shown to all. Refused before anything is queued.
prev=
for a in "$@"; do
  v=
  case "$a" in
    --db=*) v=${a#--db=} ;;
    *) [ "$prev" = "--db" ] && v=$a ;;
  esac
  case "$v" in
    *://*:*@* | *password=*)
      echo "submit.sh: --db holds a password, which would show in 'scontrol show job' to every user; put it in a file only you can read and pass --db-password-file FILE (or set PGPASSFILE) instead" >&2
      exit 2
      ;;
  esac
  prev=$a
done
# ${a[@]+"${a[@]}"}: an empty array under `set -u` is an error before bash 4.4
# ("unbound variable"), and RHEL/CentOS 7 ship bash 4.2.
study=$(sbatch --parsable ${sbatch_args[@]+"${sbatch_args[@]}"} "$here/smtlab-study.sbatch" "$@")
study=${study%%;*}
merge=$(sbatch --parsable ${merge_args[@]+"${merge_args[@]}"} --dependency="afterany:$study" "$here/smtlab-merge.sbatch")
merge=${merge%%;*}
echo "study=$study merge=$merge"
echo "the merged report will be in $SMTLAB_FLEET_DIR/merged (fleet.md, fleet.html, fleet.json)" >&2

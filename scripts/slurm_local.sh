#!/usr/bin/env bash
# Runs a scenario under Slurm's srun on this one machine: installs Debian's
# Slurm and MUNGE, writes a one-node cluster's /etc/slurm/slurm.conf (this
# host, its CPUs, tasks allowed beyond them), starts munged, slurmctld and
# slurmd, then starts every rank with srun, which gives each its
# SLURM_PROCID and the step's node list: no GRADEX_RENDEZVOUS is set.
# Root only, and it rewrites the machine's Slurm configuration: for a
# machine set aside for it.
#   bash scripts/slurm_local.sh [scenario] [workers]
#   (default scenarios/quickstart.json on 4 workers, ring and ps: 5 tasks)
set -euo pipefail
cd "$(dirname "$0")/.."
scenario="${1:-scenarios/quickstart.json}"
workers="${2:-4}"
gradex=build/default/gradex

[ "$(id -u)" -eq 0 ] || { echo "slurm_local: run as root" >&2; exit 2; }
[ -x "$gradex" ] || { echo "slurm_local: build first (bash scripts/quickstart.sh)" >&2; exit 2; }
if ! command -v srun >/dev/null || ! command -v munged >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends slurm-wlm munge
fi

host="$(hostname -s)"
cpus="$(nproc)"
state=/var/spool/gradex-slurm  # this cluster's own, apart from any other's
mkdir -p /etc/slurm "$state/ctld" "$state/d" /var/log/slurm /run/munge
cat > /etc/slurm/slurm.conf <<EOF
ClusterName=gradex_local
SlurmctldHost=$host
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$state/ctld
SlurmdSpoolDir=$state/d
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
MpiDefault=none
NodeName=$host CPUs=$cpus State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF

chown munge:munge /run/munge /etc/munge /var/lib/munge /var/log/munge 2>/dev/null || true
pgrep -x munged >/dev/null || su -s /bin/sh munge -c 'munged --force'
pkill -x slurmctld 2>/dev/null || true
pkill -x slurmd 2>/dev/null || true
sleep 1
slurmctld || { echo "slurm_local: slurmctld failed: /var/log/slurm/slurmctld.log" >&2; exit 1; }
slurmd || { echo "slurm_local: slurmd failed: /var/log/slurm/slurmd.log" >&2; exit 1; }
# The node registers within seconds; a bounded wait.
for _ in $(seq 30); do
  sinfo -h -o %t 2>/dev/null | grep -q idle && break
  sleep 1
done
sinfo -h -o %t | grep -q idle || { echo "slurm_local: the node never became idle" >&2; exit 1; }

# One task per endpoint: the workers and the PS's server (which sits out
# the ring's run). -O (overcommit): more tasks than CPUs.
timeout 600 srun -n "$((workers + 1))" -O "$gradex" launch -n "$workers" --transport tcp \
  "$scenario" -s ring,ps --no-output

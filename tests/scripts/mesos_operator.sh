#!/usr/bin/env bash
# An operator's script for Mesos 1.11/1.12's master endpoints, as such scripts are written
# (curl and jq, the v0 endpoints of Mesos's docs), run unchanged against allocator-master serve:
# a quota set and removed, a maintenance window scheduled, a machine taken down and brought
# back, a framework torn down. Usage: MASTER=HOST:PORT mesos_operator.sh FRAMEWORK_ID MACHINE
set -euo pipefail
MASTER=${MASTER:-localhost:5050}
FRAMEWORK_ID=$1
MACHINE=$2
json=(-H 'Content-Type: application/json')

# Quota: set a guarantee for "analytics", check it, remove it.
curl -sSf -X POST "http://$MASTER/master/quota" "${json[@]}" -d '{
  "role": "analytics",
  "guarantee": [{"name": "cpus", "type": "SCALAR", "scalar": {"value": 2}},
                {"name": "mem", "type": "SCALAR", "scalar": {"value": 1024}}]}'
curl -sSf "http://$MASTER/master/quota" | jq -e '.configs[] | select(.role == "analytics")' >/dev/null
curl -sSf -X DELETE "http://$MASTER/master/quota/analytics"
if curl -sSf "http://$MASTER/master/quota" | jq -e '.configs[]? | select(.role == "analytics")' >/dev/null; then
  echo "the quota of analytics is still there" >&2
  exit 1
fi

# Maintenance: schedule the machine an hour from now, take it down, bring it back.
start=$(( ($(date +%s) + 3600) * 1000000000 ))
curl -sSf -X POST "http://$MASTER/master/maintenance/schedule" "${json[@]}" -d "{
  \"windows\": [{\"machine_ids\": [{\"hostname\": \"$MACHINE\"}],
                 \"unavailability\": {\"start\": {\"nanoseconds\": $start},
                                      \"duration\": {\"nanoseconds\": 3600000000000}}}]}"
curl -sSf "http://$MASTER/master/maintenance/schedule" | jq -e ".windows[0].machine_ids[0].hostname == \"$MACHINE\"" >/dev/null
curl -sSf "http://$MASTER/master/maintenance/status" | jq -e ".draining_machines[0].id.hostname == \"$MACHINE\"" >/dev/null
curl -sSf -X POST "http://$MASTER/master/machine/down" "${json[@]}" -d "[{\"hostname\": \"$MACHINE\"}]"
curl -sSf "http://$MASTER/master/maintenance/status" | jq -e ".down_machines[0].hostname == \"$MACHINE\"" >/dev/null
if curl -sSf "http://$MASTER/master/slaves" | jq -e ".slaves[] | select(.hostname == \"$MACHINE\")" >/dev/null; then
  echo "$MACHINE is down but its agent is still listed" >&2
  exit 1
fi
curl -sSf -X POST "http://$MASTER/master/machine/up" "${json[@]}" -d "[{\"hostname\": \"$MACHINE\"}]"
curl -sSf "http://$MASTER/master/slaves" | jq -e ".slaves[] | select(.hostname == \"$MACHINE\")" >/dev/null
curl -sSf -X POST "http://$MASTER/master/maintenance/schedule" "${json[@]}" -d '{"windows": []}'

# Teardown: the framework goes, and shows among the completed ones.
curl -sSf -X POST "http://$MASTER/master/teardown" -d "frameworkId=$FRAMEWORK_ID"
curl -sSf "http://$MASTER/master/frameworks" | jq -e "([.frameworks[].id] | index(\"$FRAMEWORK_ID\")) == null" >/dev/null
curl -sSf "http://$MASTER/master/frameworks" | jq -e ".completed_frameworks[] | select(.id == \"$FRAMEWORK_ID\")" >/dev/null
echo "operator script done"

"""Browse the embedded Step Functions engine with boto3, as a console or
toolkit does: list state machines, describe one, page through its
executions one at a time following nextToken, describe each execution and
its state machine, read its history, and provoke the typed errors. Prints
one JSON object for the Go test (TestBoto3Console) to check.

Usage: python3 console.py ENDPOINT_URL
"""
import json
import sys

import boto3

endpoint = sys.argv[1]
client = boto3.client("stepfunctions", endpoint_url=endpoint, region_name="us-east-1",
                      aws_access_key_id="test", aws_secret_access_key="test")
out = {}

machines = client.list_state_machines()["stateMachines"]
out["machines"] = [{"name": m["name"], "arn": m["stateMachineArn"], "type": m["type"]} for m in machines]
arn = machines[0]["stateMachineArn"]

sm = client.describe_state_machine(stateMachineArn=arn)
out["machine"] = {k: sm[k] for k in ("name", "status", "type", "roleArn")}
out["machine"]["definitionStartAt"] = json.loads(sm["definition"])["StartAt"]

pages, names = 0, []
kwargs = {"stateMachineArn": arn, "maxResults": 1}
while True:
    page = client.list_executions(**kwargs)
    pages += 1
    names += [e["name"] for e in page["executions"]]
    if "nextToken" not in page:
        break
    kwargs["nextToken"] = page["nextToken"]
out["pages"], out["names"] = pages, names

# The paginator the CLI uses, filtered.
aborted = []
for page in client.get_paginator("list_executions").paginate(stateMachineArn=arn, statusFilter="ABORTED", PaginationConfig={"PageSize": 1}):
    aborted += [e["name"] for e in page["executions"]]
out["aborted"] = aborted

described = []
for e in client.list_executions(stateMachineArn=arn)["executions"]:
    d = client.describe_execution(executionArn=e["executionArn"])
    described.append({"name": d["name"], "status": d["status"], "input": json.loads(d["input"])})
    f = client.describe_state_machine_for_execution(executionArn=e["executionArn"])
    assert f["stateMachineArn"] == arn, f
    history = client.get_execution_history(executionArn=e["executionArn"])["events"]
    described[-1]["firstEvent"] = history[0]["type"]
out["described"] = described

v = client.validate_state_machine_definition(definition='{"StartAt": "A", "States": {}}')
out["validate"] = {"result": v["result"], "codes": [d["code"] for d in v["diagnostics"]]}

errors = {}
ghost = arn.replace(":stateMachine:", ":execution:") + ":ghost"
for label, call in [
    ("describeExecution", lambda: client.describe_execution(executionArn=ghost)),
    ("describeStateMachine", lambda: client.describe_state_machine(stateMachineArn=arn + "-other")),
    ("listExecutionsToken", lambda: client.list_executions(stateMachineArn=arn, nextToken="Z2FyYmFnZQ")),
    ("badArn", lambda: client.describe_state_machine(stateMachineArn="nope")),
]:
    try:
        call()
        errors[label] = None
    except client.exceptions.ClientError as err:
        errors[label] = err.response["Error"]["Code"]
out["errors"] = errors

print(json.dumps(out, sort_keys=True))

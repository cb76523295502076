"""The python `kubernetes` client against cosi-runtime's Kubernetes API.

Driven by tests/kubernetes_python.rs, which serves a state and runs this
script: python watch.py URL NAMESPACE GROUP VERSION PLURAL.

Every line on stdout is a JSON object; the Rust side reads them as they come.
  {"phase": "list", ...}       a list (CustomObjectsApi.list_namespaced_custom_object),
                               a get, and a list over all namespaces
  {"phase": "watching", ...}   a watch from the list's resourceVersion is about to start:
                               the Rust side now makes changes, then creates "done"
  {"phase": "event", ...}      one watch event (bookmarks included) as the client saw it
  {"phase": "stale", ...}      the watch ended; the script waits for a line on stdin
                               while the Rust side writes more than the state's history
  {"phase": "expired", ...}    the watch from the old resourceVersion raised ApiException
  {"phase": "relist", ...}     the list after the 410
  {"phase": "end"}
"""

import json
import sys

from kubernetes import client, watch
from kubernetes.client.rest import ApiException


def say(**fields):
    print(json.dumps(fields), flush=True)


def items(listed):
    return [
        {
            "name": o["metadata"]["name"],
            "resourceVersion": o["metadata"]["resourceVersion"],
            "spec": o.get("spec"),
        }
        for o in listed["items"]
    ]


def main():
    url, namespace, group, version, plural = sys.argv[1:6]
    config = client.Configuration(host=url)
    api = client.CustomObjectsApi(client.ApiClient(config))
    where = dict(group=group, version=version, namespace=namespace, plural=plural)

    listed = api.list_namespaced_custom_object(**where)
    rv = listed["metadata"]["resourceVersion"]
    got = api.get_namespaced_custom_object(name="eth1", **where)
    cluster = api.list_cluster_custom_object(group=group, version=version, plural=plural)
    say(
        phase="list",
        kind=listed["kind"],
        resourceVersion=rv,
        items=items(listed),
        got={"kind": got["kind"], "name": got["metadata"]["name"], "spec": got["spec"]},
        cluster=[
            [o["metadata"]["namespace"], o["metadata"]["name"]] for o in cluster["items"]
        ],
    )

    # What python programs write: resource_version from the list, bookmarks on,
    # a timeout (the client then sends watch=True, allowWatchBookmarks=True:
    # capitalised booleans).
    w = watch.Watch()
    say(phase="watching", resourceVersion=rv)
    for event in w.stream(
        api.list_namespaced_custom_object,
        resource_version=rv,
        allow_watch_bookmarks=True,
        timeout_seconds=30,
        **where,
    ):
        o = event["object"]
        md = o.get("metadata", {})
        say(
            phase="event",
            type=event["type"],
            kind=o.get("kind"),
            name=md.get("name"),
            resourceVersion=md.get("resourceVersion"),
            spec=o.get("spec"),
        )
        if event["type"] == "ADDED" and md.get("name") == "done":
            w.stop()
    # The client's own record of where it stands (bookmarks move it too).
    say(phase="stale", resourceVersion=rv, watched_to=w.resource_version)

    sys.stdin.readline()
    w = watch.Watch()
    try:
        seen = [
            e["type"]
            for e in w.stream(
                api.list_namespaced_custom_object,
                resource_version=rv,
                allow_watch_bookmarks=True,
                timeout_seconds=10,
                **where,
            )
        ]
        say(phase="expired", status=None, seen=seen)
    except ApiException as e:
        say(phase="expired", status=e.status, reason=e.reason)

    listed = api.list_namespaced_custom_object(**where)
    say(
        phase="relist",
        resourceVersion=listed["metadata"]["resourceVersion"],
        items=items(listed),
    )
    say(phase="end")


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: Apache-2.0
"""Reads a Prometheus text exposition with prometheus_client's own parsers and prints it as JSON.

    parse_exposition.py openmetrics|prometheus [URL]

Without URL the text is read from standard input; with one it is fetched (GET, with the Accept
header a Prometheus server sends for that format). Prints one JSON object: "status" and
"content_type" (URL only), and "samples", a list of {"name", "labels", "value"}, and "families",
{name: type}. A text the parser refuses exits 1 with its message on standard error.
"""

import json
import sys
import urllib.error
import urllib.request

from prometheus_client.openmetrics.parser import text_string_to_metric_families as openmetrics
from prometheus_client.parser import text_string_to_metric_families as prometheus

ACCEPT = {
    "openmetrics": "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5",
    "prometheus": "text/plain;version=0.0.4",
}


def main() -> int:
    fmt = sys.argv[1]
    result: dict[str, object] = {}
    if len(sys.argv) > 2:
        request = urllib.request.Request(sys.argv[2], headers={"Accept": ACCEPT[fmt]})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                result["status"] = response.status
                result["content_type"] = response.headers.get("Content-Type", "")
                text = response.read().decode("utf-8")
        except urllib.error.HTTPError as e:
            result["status"] = e.code
            print(json.dumps(result))
            return 0
    else:
        text = sys.stdin.read()
    parse = openmetrics if fmt == "openmetrics" else prometheus
    samples = []
    families = {}
    for family in parse(text):
        families[family.name] = family.type
        for s in family.samples:
            samples.append({"name": s.name, "labels": dict(s.labels), "value": s.value})
    result["samples"] = samples
    result["families"] = families
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())

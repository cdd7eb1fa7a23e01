"""Regenerate nodewright_aws/static_prices.json from the AWS Pricing API.

Needs real AWS credentials allowed to call pricing:GetProducts (read-only, free)::

    uv run --frozen python providers/aws/scripts/generate_static_prices.py us-east-1 [more regions]

Only instance types already in the table are kept unless --all is given, so the file stays
small; the provider refreshes prices from the API at run time anyway.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import boto3

from nodewright_aws.clients import pricing_region
from nodewright_aws.pricing import STATIC_TABLE, fetch_on_demand

TABLE = Path(__file__).resolve().parents[1] / "nodewright_aws" / STATIC_TABLE


def main(argv: list[str]) -> int:
    keep_all = "--all" in argv
    regions = [a for a in argv if not a.startswith("--")] or ["us-east-1"]
    document = json.loads(TABLE.read_text())
    for region in regions:
        client = boto3.client("pricing", region_name=pricing_region(region))
        prices = fetch_on_demand(client, region)
        if not prices:
            print(f"{region}: the Pricing API returned nothing; table left as it was")
            continue
        old = document["regions"].get(region, document["regions"].get("us-east-1", {}))
        if not keep_all:
            prices = {k: v for k, v in prices.items() if k in old}
        document["regions"][region] = dict(sorted(prices.items()))
        print(f"{region}: {len(prices)} prices")
    TABLE.write_text(json.dumps(document, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

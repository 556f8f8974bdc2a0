"""A customer-data pipeline as two engines report it, for governance tests.

CRM customers (email declared pii by the producer's tags facet)
  -> spark  etl.load_customers   -> lake staging/customers        email_norm <- email
  -> spark  etl.build_profiles   -> lake analytics/customer_profiles
                                      contact_email <- email_norm, email_hash <- email_norm (masking)
  -> trino  marts.build_contacts -> hive.marts.contacts            email <- contact_email,
                                                                    email_hash <- email_hash
                                 -> hive.marts.country_counts      emails <- COUNT(contact_email)
  -> trino  exports.newsletter   -> hive.public.newsletter         v1: recipient <- email (pii!)
                                                                    v2: recipient_hash <- email_hash
"""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

CRM = "postgres://crm:5432"
LAKE = "s3://lake"
TRINO = "trino://trino:8080"
SPARK_PRODUCER = "https://github.com/OpenLineage/OpenLineage/tree/1.30.0/integration/spark"
TRINO_PRODUCER = "https://github.com/trinodb/trino/tree/470/plugin/trino-openlineage"
SCHEMA_URL = "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent"
T0 = dt.datetime(2026, 3, 1, 6, 0, tzinfo=dt.UTC)

CUSTOMERS = (CRM, "crm.public.customers")
STAGING = (LAKE, "staging/customers")
PROFILES = (LAKE, "analytics/customer_profiles")
CONTACTS = (TRINO, "hive.marts.contacts")
COUNTS = (TRINO, "hive.marts.country_counts")
NEWSLETTER = (TRINO, "hive.public.newsletter")

# output field -> [(input dataset, input field, subtype, description, masking)]
Lineage = dict[str, list[tuple[tuple[str, str], str, str, str | None, bool]]]


def _dataset(
    ds: tuple[str, str],
    fields: list[str],
    lineage: Lineage | None = None,
    tags: list[dict[str, str]] | None = None,
) -> dict[str, Any]:
    facets: dict[str, Any] = {
        "schema": {
            "_producer": SPARK_PRODUCER,
            "_schemaURL": "https://openlineage.io/spec/facets/1-1-1/SchemaDatasetFacet.json",
            "fields": [{"name": f, "type": "string"} for f in fields],
        }
    }
    if tags is not None:
        facets["tags"] = {
            "_producer": SPARK_PRODUCER,
            "_schemaURL": "https://openlineage.io/spec/facets/1-0-0/TagsDatasetFacet.json",
            "tags": tags,
        }
    if lineage is not None:
        facets["columnLineage"] = {
            "_producer": SPARK_PRODUCER,
            "_schemaURL": "https://openlineage.io/spec/facets/1-2-0/ColumnLineageDatasetFacet.json",
            "fields": {
                out: {
                    "inputFields": [
                        {
                            "namespace": src[0],
                            "name": src[1],
                            "field": field,
                            "transformations": [
                                {
                                    "type": "DIRECT",
                                    "subtype": subtype,
                                    "description": description or "",
                                    "masking": masking,
                                }
                            ],
                        }
                        for src, field, subtype, description, masking in sources
                    ]
                }
                for out, sources in lineage.items()
            },
        }
    return {"namespace": ds[0], "name": ds[1], "facets": facets}


def _run(
    producer: str,
    namespace: str,
    job: str,
    minutes: int,
    inputs: list[dict[str, Any]],
    outputs: list[dict[str, Any]],
    code: str,
) -> list[dict[str, Any]]:
    """A START and a COMPLETE of one run; the COMPLETE carries the datasets and their facets."""
    run_id = str(uuid.uuid4())
    job_facets = {
        "sourceCode": {
            "_producer": producer,
            "_schemaURL": "https://openlineage.io/spec/facets/1-0-1/SourceCodeJobFacet.json",
            "language": "sql",
            "sourceCode": code,
        }
    }

    def event(kind: str, at: int, with_datasets: bool) -> dict[str, Any]:
        return {
            "eventType": kind,
            "eventTime": (T0 + dt.timedelta(minutes=at)).isoformat(),
            "producer": producer,
            "schemaURL": SCHEMA_URL,
            "run": {"runId": run_id, "facets": {}},
            "job": {"namespace": namespace, "name": job, "facets": job_facets},
            "inputs": inputs if with_datasets else [],
            "outputs": outputs if with_datasets else [],
        }

    return [event("START", minutes, False), event("COMPLETE", minutes + 1, True)]


def load_customers(minutes: int = 0) -> list[dict[str, Any]]:
    customers = _dataset(
        CUSTOMERS,
        ["id", "email", "country"],
        tags=[{"key": "pii", "value": "true", "field": "email", "source": "CRM"}],
    )
    staging = _dataset(
        STAGING,
        ["id", "email_norm", "country"],
        {
            "id": [(CUSTOMERS, "id", "IDENTITY", None, False)],
            "email_norm": [(CUSTOMERS, "email", "TRANSFORMATION", "lower(trim(email))", False)],
            "country": [(CUSTOMERS, "country", "IDENTITY", None, False)],
        },
    )
    return _run(
        SPARK_PRODUCER, "spark", "etl.load_customers", minutes, [customers], [staging], "load v1"
    )


def build_profiles(minutes: int = 10) -> list[dict[str, Any]]:
    staging = _dataset(STAGING, ["id", "email_norm", "country"])
    profiles = _dataset(
        PROFILES,
        ["customer_id", "contact_email", "email_hash", "country"],
        {
            "customer_id": [(STAGING, "id", "IDENTITY", None, False)],
            "contact_email": [(STAGING, "email_norm", "IDENTITY", None, False)],
            "email_hash": [(STAGING, "email_norm", "TRANSFORMATION", "sha2(email_norm)", True)],
            "country": [(STAGING, "country", "IDENTITY", None, False)],
        },
    )
    return _run(
        SPARK_PRODUCER, "spark", "etl.build_profiles", minutes, [staging], [profiles], "profiles v1"
    )


def build_contacts(minutes: int = 20) -> list[dict[str, Any]]:
    profiles = _dataset(PROFILES, ["customer_id", "contact_email", "email_hash", "country"])
    contacts = _dataset(
        CONTACTS,
        ["email", "email_hash", "country"],
        {
            "email": [(PROFILES, "contact_email", "IDENTITY", None, False)],
            "email_hash": [(PROFILES, "email_hash", "IDENTITY", None, False)],
            "country": [(PROFILES, "country", "IDENTITY", None, False)],
        },
    )
    counts = _dataset(
        COUNTS,
        ["country", "customers", "emails"],
        {
            "country": [(PROFILES, "country", "IDENTITY", None, False)],
            "customers": [(PROFILES, "customer_id", "AGGREGATION", "COUNT(customer_id)", False)],
            "emails": [
                (PROFILES, "contact_email", "AGGREGATION", "count(DISTINCT contact_email)", False)
            ],
        },
    )
    return _run(
        TRINO_PRODUCER,
        TRINO,
        "marts.build_contacts",
        minutes,
        [profiles],
        [contacts, counts],
        "contacts v1",
    )


def export_newsletter(version: int, minutes: int = 30) -> list[dict[str, Any]]:
    """v1 copies the contact email into the public newsletter list; v2 only its hash."""
    contacts = _dataset(CONTACTS, ["email", "email_hash", "country"])
    if version == 1:
        fields = ["recipient", "country"]
        lineage: Lineage = {"recipient": [(CONTACTS, "email", "IDENTITY", None, False)]}
    else:
        fields = ["recipient_hash", "country"]
        lineage = {"recipient_hash": [(CONTACTS, "email_hash", "IDENTITY", None, False)]}
    lineage["country"] = [(CONTACTS, "country", "IDENTITY", None, False)]
    # The list is public: its producer says so (a dataset-level tag, no field).
    public = [{"key": "classification", "value": "public", "source": "TRINO"}]
    newsletter = _dataset(NEWSLETTER, fields, lineage, tags=public)
    code = f"newsletter v{version}"
    return _run(TRINO_PRODUCER, TRINO, "exports.newsletter", minutes, [contacts], [newsletter], code)


def upstream() -> list[dict[str, Any]]:
    """The three jobs before the newsletter export."""
    return load_customers() + build_profiles() + build_contacts()

.DEFAULT_GOAL := help
VENV ?= .venv
BIN := $(VENV)/bin

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

install: ## create .venv with what every test and benchmark needs (Chromium: apt-get install chromium)
	python3 -m venv $(VENV)
	$(BIN)/pip install -q -e '.[dev,spark,e2e,bench]' './integrations/spark[pyspark]'

lint: ## ruff, the formatter's check and mypy, as CI runs them
	$(BIN)/ruff check backend tests integrations
	$(BIN)/ruff format --check backend tests integrations
	$(BIN)/mypy

test: ## the whole test suite (what CI runs)
	$(BIN)/pytest

test-fast: ## everything but the Spark and Airflow end-to-end tests
	$(BIN)/pytest -m "not spark and not airflow"

migrate: ## apply migrations to HEADWATER_DATABASE_URL (or the embedded database)
	$(BIN)/headwater migrate

export-schemas: ## regenerate schemas/graphql and schemas/openapi
	$(BIN)/headwater export-schemas

check: lint test ## what CI checks

.PHONY: help install lint test test-fast migrate export-schemas check

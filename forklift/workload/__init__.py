"""Workloads: what a bench sends. Cohorts from JSONL, synthetic fixed-length prompts, salt, sampling."""

from forklift.workload.cohort import load_cohort
from forklift.workload.items import PRESETS, WorkItem, Workload
from forklift.workload.prepare import prepare
from forklift.workload.synthetic import synthetic_workload

__all__ = ["PRESETS", "WorkItem", "Workload", "load_cohort", "prepare", "synthetic_workload"]

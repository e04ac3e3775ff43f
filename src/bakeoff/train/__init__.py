"""Fine-tuning: embedders (in-batch negatives) and cross-encoder rerankers, trained on one
split with test-query leak checks. Heavy dependencies load inside the functions."""

from .common import TRAINING_FILE, read_training_record
from .hygiene import check_hygiene, find_leaks, normalise

__all__ = ["TRAINING_FILE", "read_training_record", "check_hygiene", "find_leaks", "normalise"]

"""Datasets as first-class inputs: importers of public benchmarks, dataset statistics, SQL-first generation.

``importers``  Spider, SParC, CoSQL, BIRD, LogicCat -> ``*.sqleval.yaml`` suites and a predictions JSONL
``stats``      the MRO paper's dataset statistics (clause usage, difficulty, lengths, duplicates, similarity)
``generate``   the MRO paper's SQL-first generation pipeline with execution filters
``cli``        the ``sqleval import|stats|generate`` subcommands (``python -m pytest_sqleval.datasets``)
"""

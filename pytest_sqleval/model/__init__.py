"""The model in the loop: predictions asked of a model while the suite runs.

``config``       suite keys (`model:`, `prompt:`, ...) and the model settings, merged CLI > suite > ini
``prompt``       Jinja2 prompt templates (StrictUndefined) rendered into chat messages; the default prompt
``schema_text``  the `schema` placeholder: ddl | spider | compact, sample rows, foreign keys
``extract``      SQL extraction from the model's answer: auto | fenced | raw, and the `no_sql` miss
``cache``        the on-disk response cache (atomic writes), modes use | refresh | off | only
``client``       the OpenAI-compatible chat client (official openai SDK: retries, Retry-After, timeout)
``predictors``   PredictorCase, the built-in predictor, normalising what a predictor returns
``runtime``      per process: thread pool, look-ahead submission, interaction history, stopping on 401/404
``usage``        calls, cache hits, tokens, latency percentiles and cost per suite; saving predictions

The pytest glue is :mod:`pytest_sqleval.model_plugin`. Nothing here is imported unless a suite or option asks
for a model.
"""

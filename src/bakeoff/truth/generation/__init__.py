"""LLM-written ground truth: describe mode (:mod:`.describe`), cluster mode (:mod:`.clusters`) and what they
share — prompts, document sampling, the leak target, cluster-answer repair, the health verdict, the time
estimate and ``--queries-like`` — with :func:`~bakeoff.truth.generation.generate.generate_truth`, the
``bakeoff generate`` pipeline end to end. Its queries pass the filters of :mod:`bakeoff.truth.filters`."""

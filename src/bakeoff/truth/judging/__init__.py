"""An LLM assessor for the unjudged documents of a judgment set (:mod:`.assess`, ``bakeoff assess``)."""

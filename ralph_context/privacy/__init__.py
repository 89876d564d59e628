"""Nothing private kept: secrets are redacted from every text before it is embedded or
stored (``redactor``), by their shapes (``rules``) and by the names they are assigned to
(``assignments``)."""

from ralph_context.privacy.redactor import MARK, Redacted, Redactor, counted, mark

__all__ = ["MARK", "Redacted", "Redactor", "counted", "mark"]

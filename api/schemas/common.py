"""The model configurations the schemas share."""

from __future__ import annotations

from pydantic import ConfigDict

#: response models read ORM rows by attribute (``Model.model_validate(row)``)
FROM_ROWS = ConfigDict(from_attributes=True)
# Request models are strict: `"d_max": true` or `"3"` is a 422, never silently coerced.
STRICT = ConfigDict(extra="forbid", strict=True)

"""``Problem``: RFC 9457 problem details, the body of every error reply."""

from __future__ import annotations

from pydantic import BaseModel, Field


class FieldError(BaseModel):
    location: str = Field(examples=["body"], description="body, query, path or header")
    field: str = Field(examples=["d_max"], description="Dotted path of the field")
    message: str = Field(examples=["Input should be less than or equal to 8"])
    type: str | None = Field(default=None, examples=["less_than_equal"])


class Problem(BaseModel):
    """RFC 9457 problem details."""

    type: str = Field(examples=["urn:adapt:problem:validation-error"])
    title: str = Field(examples=["Invalid request"])
    status: int = Field(examples=[422])
    detail: str = Field(examples=["1 invalid field: d_max: Input should be less than or equal "
                                  "to 8"])
    instance: str | None = Field(default=None, examples=["/tasks"])
    errors: list[FieldError] | None = None

"""A chat model behind any OpenAI-compatible ``/v1/chat/completions`` endpoint.

OpenAI itself, Ollama, vLLM, llama.cpp's server: anything that speaks the chat completions API.
The API key is read from an environment variable (``api_key_env``) on every request and never
kept in settings; without it no ``Authorization`` header is sent, which local servers expect.

429, 5xx, timeouts and connection errors are retried with exponential backoff (a server's
Retry-After, up to 60 s, is honoured unless ``retry_base_delay`` is 0); any other HTTP error, and
a reply that is not a chat completion, is an ``LlmError`` at once.

Structured output goes through instructor (``structured_mode``: ``tools`` = function calling,
``json_schema`` = ``response_format`` with the schema, ``json`` = JSON mode with the schema in the
prompt, for local servers). Output that does not validate is asked again with the validation
error appended, ``max_validation_retries`` times, then it is an ``LlmError``. JSON wrapped in
prose or in a ```json fence is cut out before instructor parses it.

``usage`` counts every answered request (validation retries included) with the token counts the
server reports; ``usage.retries`` counts HTTP retries and validation retries.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal
from urllib.parse import urlsplit

from pydantic import Field, ValidationError

from reme_core.api import (
    ComponentContext,
    ComponentSettings,
    Llm,
    LlmError,
    ModelT,
    hookimpl,
    required_settings,
)
from reme_plugins.openai_endpoint import (
    EndpointSettings,
    api_key,
    backoff_delay,
    parse_retry_after,
    refusal,
)

if TYPE_CHECKING:
    import openai

log = logging.getLogger(__name__)

NO_KEY = "unused"  # the openai client insists on a key; the real one goes in each request
_FENCE = re.compile(r"```(?:json|JSON)?\s*\n?(.*?)```", re.DOTALL)


class OpenAILlm(Llm):
    """Chat completions from an OpenAI-compatible server, structured output via instructor."""

    name: ClassVar[str] = "openai"

    class Settings(EndpointSettings):
        model: str = Field(min_length=1)
        """The endpoint's model name, e.g. ``gpt-4o-mini`` or ``qwen2.5:7b``. Required."""
        timeout: float = Field(60.0, gt=0)
        max_validation_retries: int = Field(2, ge=0)
        temperature: float = Field(0.0, ge=0)
        structured_mode: Literal["tools", "json_schema", "json"] = "json_schema"

    settings: Settings

    def __init__(
        self, settings: ComponentSettings | None = None, context: ComponentContext | None = None
    ):
        missing = (
            "the openai llm needs settings.model: the endpoint's model name "
            "(for example gpt-4o-mini, or qwen2.5:7b on Ollama)"
        )
        super().__init__(required_settings(settings, self.Settings, missing), context)
        self._lock = threading.Lock()
        self._client: openai.OpenAI | None = None
        self._instructor: Any = None

    @property
    def model_id(self) -> str:
        """``openai:<host>/<model>``: the same model name on two servers may be two models."""
        s = self.settings
        host = urlsplit(s.base_url).netloc or s.base_url
        return f"openai:{host}/{s.model}"

    def complete(self, messages: Sequence[dict[str, str]], *, max_tokens: int | None = None) -> str:
        kwargs: dict[str, Any] = {"messages": list(messages)}
        if max_tokens is not None:
            kwargs["max_tokens"] = max_tokens
        response = self._chat(**kwargs)
        try:
            content = response.choices[0].message.content
        except (AttributeError, IndexError, TypeError) as exc:
            raise LlmError(f"{self._where()} returned a reply without a message") from exc
        return content or ""

    def structured(
        self,
        messages: Sequence[dict[str, str]],
        response_model: type[ModelT],
        *,
        max_retries: int | None = None,
    ) -> ModelT:
        from instructor.core.exceptions import InstructorError

        retries = self.settings.max_validation_retries if max_retries is None else max_retries
        answered_before = self.usage.calls
        try:
            result = self._structured_client().create(
                response_model=response_model,
                messages=list(messages),
                max_retries=max(retries, 0),
                strict=False,  # local models write "3" for 3; let pydantic coerce
            )
        except LlmError:
            raise
        except InstructorError as exc:
            cause = _find_cause(exc, LlmError)
            if cause is not None:
                raise cause from None
            last = _last_error(exc)
            raise LlmError(
                f"{self._where()} gave no valid {response_model.__name__} "
                f"after {retries + 1} attempt{'s' * (retries > 0)}: {last}"
            ) from exc
        finally:
            answered = self.usage.calls - answered_before
            with self._lock:
                self.usage.retries += max(answered - 1, 0)  # validation retries
        # instructor returns an instance of a subclass it made of response_model, carrying the
        # raw completion: == and pickling break. Rebuild the validated values as the caller's class.
        if type(result) is response_model:
            return result
        return response_model.model_construct(_fields_set=result.model_fields_set, **dict(result))

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None
            self._instructor = None

    # -- internals ---------------------------------------------------------------------------

    def _where(self) -> str:
        return f"chat endpoint {self.settings.base_url} (model {self.settings.model!r})"

    def _openai(self) -> openai.OpenAI:
        import openai  # on first use: registering the plugin must not need it

        with self._lock:
            if self._client is None:
                s = self.settings
                self._client = openai.OpenAI(
                    api_key=NO_KEY, base_url=s.base_url, timeout=s.timeout, max_retries=0
                )
            return self._client

    def _structured_client(self) -> Any:
        import instructor

        with self._lock:
            if self._instructor is None:
                mode = {
                    "tools": instructor.Mode.TOOLS,
                    "json_schema": instructor.Mode.JSON_SCHEMA,
                    "json": instructor.Mode.JSON,
                }[self.settings.structured_mode]
                # Patch our own create (not client.chat.completions.create, as from_openai
                # would) so that HTTP retries, usage and JSON extraction apply to every attempt.
                create = instructor.patch(create=self._chat_for_instructor, mode=mode)
                self._instructor = instructor.Instructor(client=None, create=create, mode=mode)
            return self._instructor

    def _chat_for_instructor(self, **kwargs: Any) -> Any:
        response = self._chat(**kwargs)
        if self.settings.structured_mode != "tools":
            _extract_json_content(response)
        return response

    def _chat(self, **kwargs: Any) -> Any:
        """One chat completion with HTTP retries; counts usage for the answered request."""
        import openai

        s = self.settings
        kwargs.setdefault("model", s.model)
        kwargs.setdefault("temperature", s.temperature)
        kwargs.pop("stream", None)
        last_error = ""
        last_retry_after: float | None = None
        for attempt in range(s.retries + 1):
            if attempt:
                with self._lock:
                    self.usage.retries += 1
                time.sleep(self._delay(attempt, last_retry_after))
            last_retry_after = None
            try:
                response = self._openai().chat.completions.create(
                    **kwargs, extra_headers=self._headers()
                )
            except openai.APITimeoutError:
                last_error = f"no answer within {s.timeout:g}s"
            except openai.APIConnectionError as exc:
                last_error = f"cannot reach {s.base_url}: {exc}"
            except openai.APIStatusError as exc:
                status = exc.status_code
                last_error = f"HTTP {status}: {_error_message(exc)}"
                if status != 429 and status < 500:
                    raise LlmError(self._refused(status, last_error)) from None
                last_retry_after = parse_retry_after(exc.response.headers.get("retry-after"))
            except openai.OpenAIError as exc:
                raise LlmError(f"{self._where()} failed: {exc}") from exc
            except ValueError as exc:  # a 200 whose body is not JSON
                raise LlmError(f"{self._where()} returned an unusable reply: {exc}") from exc
            else:
                return self._counted(response)
            if attempt < s.retries:
                log.warning("chat request failed (%s); retrying", last_error)
        tries = s.retries + 1
        raise LlmError(f"{self._where()} failed {tries} time{'s' * (tries > 1)}: {last_error}")

    def _counted(self, response: Any) -> Any:
        if not getattr(response, "choices", None):
            raise LlmError(f"{self._where()} returned an unusable reply: no choices")
        usage = getattr(response, "usage", None)
        with self._lock:
            self.usage.calls += 1
            self.usage.prompt_tokens += int(getattr(usage, "prompt_tokens", 0) or 0)
            self.usage.completion_tokens += int(getattr(usage, "completion_tokens", 0) or 0)
        return response

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        return backoff_delay(self.settings, attempt, retry_after)

    def _headers(self) -> dict[str, Any]:
        import openai

        key = api_key(self.settings)
        # Without a key no Authorization header at all, which is what local servers expect.
        return {"Authorization": f"Bearer {key}" if key else openai.Omit()}

    def _refused(self, status: int, error: str) -> str:
        return refusal(self.settings, self._where(), status, error)


def extract_json(text: str) -> str | None:
    """The JSON document in ``text``: as is, in a ```json fence, or the outermost ``{...}``/``[...]``.

    Returns None when nothing in ``text`` parses.
    """
    candidates = [text.strip()]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(text)]
    for open_, close in (("{", "}"), ("[", "]")):
        start, end = text.find(open_), text.rfind(close)
        if 0 <= start < end:
            candidates.append(text[start : end + 1])
    for candidate in candidates:
        try:
            json.loads(candidate)
        except ValueError:
            continue
        return candidate
    return None


def _extract_json_content(response: Any) -> None:
    """Cut the JSON out of the reply's text in place, so instructor's strict parser accepts it."""
    try:
        message = response.choices[0].message
    except (AttributeError, IndexError, TypeError):
        return
    text = getattr(message, "content", None)
    if isinstance(text, str) and text:
        found = extract_json(text)
        if found is not None and found != text:
            message.content = found


def _find_cause(exc: BaseException, kind: type[BaseException]) -> Any:
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, kind):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def _last_error(exc: BaseException) -> str:
    failed = getattr(exc, "failed_attempts", None)
    if failed:
        last = failed[-1].exception
        if isinstance(last, ValidationError):
            return "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}"
                for e in last.errors()
            )[:500]
        return str(last)[:500]
    return str(exc)[:500]


def _error_message(exc: Any) -> str:
    response = exc.response
    try:
        message = response.json()["error"]["message"]
    except (ValueError, KeyError, TypeError):
        message = response.text
    return str(message).strip()[:300] or response.reason_phrase


@hookimpl
def register_llms(register: Callable[[type[Llm]], None]) -> None:
    """Register the OpenAI-compatible chat client as ``openai``."""
    register(OpenAILlm)

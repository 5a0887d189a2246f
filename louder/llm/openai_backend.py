"""The ``openai`` backend: ``openai:MODEL[@BASE_URL[,BASE_URL...]]`` builds LangChain's ChatOpenAI
(``client: langchain``, the default), louder's lean HTTP client (``client: http``), or an endpoint
pool of HTTP clients over several replicas (comma-separated base URLs)."""

from __future__ import annotations

from louder.llm.registry import BackendInfo, register


def _build_openai(model: str, url: str | None, cfg):
    control = getattr(cfg, "reasoning_control", None)  # reasoning_effort (default) or enable_thinking
    if url and "," in url:
        from louder.llm.http import HTTPChatModel
        from louder.llm.pool import EndpointPool

        # Each replica tries once; the pool retries on the least busy replica that is not resting.
        return EndpointPool([HTTPChatModel(model, u, timeout_s=cfg.timeout_s, max_attempts=1, json_mode=cfg.json_mode,
                                           reasoning_control=control)
                             for u in url.split(",")], max_attempts=cfg.max_attempts)
    if cfg.client == "http":
        from louder.llm.http import HTTPChatModel

        return HTTPChatModel(model, url, timeout_s=cfg.timeout_s, max_attempts=cfg.max_attempts,
                             json_mode=cfg.json_mode, reasoning_control=control)
    from louder.llm.remote import RemoteChatModel

    return RemoteChatModel("openai", model, url, timeout_s=cfg.timeout_s, max_attempts=cfg.max_attempts,
                           json_mode=cfg.json_mode, reasoning_control=control)


register(BackendInfo("openai", _build_openai, forms=("openai:MODEL", "openai:MODEL@BASE_URL"), can_score=True,
                     needs_key="OPENAI_API_KEY", priced=True, preflight=True,
                     reasoning_controls=("reasoning_effort", "enable_thinking")))

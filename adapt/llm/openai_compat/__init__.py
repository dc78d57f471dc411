"""ChatModel backends over the official ``openai`` client, for any OpenAI-compatible server
(OpenAI, vLLM, Ollama, llama.cpp's server, the simulator's HTTP server):

- :mod:`.models`: ``OpenAIChatModel`` (``/chat/completions``) and ``OpenAICompletionModel``
  (the legacy ``/completions``, and scoring);
- :mod:`.pool`: the clients shared per event loop over one HTTP connection pool;
- :mod:`.endpoint`: the endpoint policy (base URL, which key is sent where, grammar fields);
- :mod:`.errors`: a failed call mapped to a ``ProviderError``.

``adapt.llm`` exports the two model classes and ``ClientPool`` (loaded on first use).
"""

package upstream

import (
	"net/url"
	"strings"
)

// The provider names Phaseflow reports in status: routed and completed. They describe who
// serves an endpoint, not which wire it speaks: OpenRouter, vLLM and Ollama all speak Chat
// Completions, and some of them the Responses API too.
const (
	ProviderOpenAI           = "openai"
	ProviderOpenRouter       = "openrouter"
	ProviderOllama           = "ollama"
	ProviderVLLM             = "vllm"
	ProviderOpenAICompatible = "openai_compatible"
)

// ollamaPort is the port Ollama listens on unless told otherwise.
const ollamaPort = "11434"

// DetectProvider names the provider behind a base URL, the way the original extractor did
// (docs/json-skills.md: openrouter.ai is OpenRouter): by host name, and for the self-hosted
// servers, which run under any name, by a host name that says so or Ollama's default port.
// Anything else, a bare IP or a gateway included, is "openai_compatible": we know only
// that it speaks the wire.
func DetectProvider(baseURL string) string {
	u, err := url.Parse(baseURL)
	if err != nil || u.Host == "" {
		return ProviderOpenAICompatible
	}
	host := strings.ToLower(u.Hostname())
	switch {
	case host == "api.openai.com" || strings.HasSuffix(host, ".openai.com"):
		return ProviderOpenAI
	case host == "openrouter.ai" || strings.HasSuffix(host, ".openrouter.ai"):
		return ProviderOpenRouter
	case strings.Contains(host, "ollama") || u.Port() == ollamaPort:
		return ProviderOllama
	case strings.Contains(host, "vllm"):
		return ProviderVLLM
	}
	return ProviderOpenAICompatible
}

// openAIHost reports OpenAI's own API, or Azure OpenAI's: the servers that take the output
// limit as max_completion_tokens.
func openAIHost(baseURL string) bool {
	u, err := url.Parse(baseURL)
	if err != nil {
		return false
	}
	host := strings.ToLower(u.Hostname())
	return host == "api.openai.com" || strings.HasSuffix(host, ".openai.com") || strings.HasSuffix(host, ".openai.azure.com")
}

// endpointURL joins an API root and a route's path. The root may carry a query (Azure's
// ?api-version=…), which stays the URL's query: the route goes on the path.
func endpointURL(base, route string) string {
	u, err := url.Parse(base)
	if err != nil || u.Scheme == "" || u.Host == "" { // configuration checks the URL; keep its text
		return strings.TrimRight(base, "/") + route
	}
	u.Path = strings.TrimRight(u.Path, "/") + route
	if u.RawPath != "" {
		u.RawPath = strings.TrimRight(u.RawPath, "/") + route
	}
	return u.String()
}

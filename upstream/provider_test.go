package upstream

import "testing"

func TestDetectProvider(t *testing.T) {
	tests := []struct{ name, url, want string }{
		{"OpenAI", "https://api.openai.com/v1", ProviderOpenAI},
		{"OpenAI regional host", "https://eu.api.openai.com/v1", ProviderOpenAI},
		{"OpenRouter", "https://openrouter.ai/api/v1", ProviderOpenRouter},
		{"Ollama default port", "http://127.0.0.1:11434/v1", ProviderOllama},
		{"Ollama by host name", "http://ollama.internal:8080/v1", ProviderOllama},
		{"vLLM by host name", "http://vllm-qwen.gpu.svc:8000/v1", ProviderVLLM},
		{"a gateway", "https://llm-gateway.example.com/v1", ProviderOpenAICompatible},
		{"loopback mock", "http://127.0.0.1:9090/v1", ProviderOpenAICompatible},
		{"look-alike host is not OpenAI", "https://api.openai.com.evil.example/v1", ProviderOpenAICompatible},
		{"not a URL", "::", ProviderOpenAICompatible},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := DetectProvider(tt.url); got != tt.want {
				t.Errorf("DetectProvider(%q) = %q, want %q", tt.url, got, tt.want)
			}
		})
	}
}

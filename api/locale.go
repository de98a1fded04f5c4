package api

import (
	"strings"

	"github.com/phaseflow/phaseflow/skills"
)

// checkLocale vets a locale given in a request body: "" (the Accept-Language header then
// decides), or a tag whose primary language is a supported one ("en", "en-GB", "zh-CN",
// "zh_Hans"). Anything else answers 400 naming the supported locales, rather than quietly
// becoming "en" as a header value does.
func checkLocale(locale string) error {
	if locale == "" {
		return nil
	}
	primary, _, _ := strings.Cut(strings.ReplaceAll(locale, "_", "-"), "-")
	for _, l := range skills.Locales {
		if strings.EqualFold(primary, l) {
			return nil
		}
	}
	return unsupportedLocale(locale)
}

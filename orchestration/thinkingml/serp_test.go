package thinkingml

import "testing"

func TestSensitiveKind(t *testing.T) {
	tests := []struct{ name, query, want string }{
		{"plain query", "three-day split routine", ""},
		{"email", "write to jane.doe+gym@mail.example.co", "an e-mail address"},
		{"at sign without domain", "@jane on twitter", ""},
		{"email without tld", "user@localhost", ""},
		{"international phone", "+44 20 7946 0958", "a phone number"},
		{"us phone", "(555) 123-4567", "a phone number"},
		{"cn mobile", "联系13812345678", "a phone number"},
		{"cn mobile grouped", "138 1234 5678", "a phone number"},
		{"cn landline", "010-12345678", "a phone number"},
		{"years", "olympics 2020 2024 2028", ""},
		{"date", "schedule 2024-01-15", ""},
		{"decimal", "pi 3.14159265358", ""},
		{"digits glued to letters", "model ab1234567890", ""},
		{"weights", "5x5 100kg squat", ""},
		{"ipv4", "router 192.168.1.1 login", "an IPv4 address"},
		{"ipv4 with port", "10.0.0.7:8080 down", "an IPv4 address"},
		{"version number", "release v1.2.3.4", ""},
		{"ipv6", "fe80::1ff:fe23:4567:890a setup", "an IPv6 address"},
		{"ipv6 mapped", "::ffff:192.0.2.1", "an IPv6 address"},
		{"cpp scope", "std::vector push_back", ""},
		{"time", "meet at 12:30:45", ""},
		{"zh street and number", "上海市人民路100号 健身房", "a street address"},
		{"zh lane", "愚园路1088弄5号 房价", "a street address"},
		{"zh full-width digits", "南京东路１２号", "a street address"},
		{"zh room", "浦东新区某小区1201室", "a street address"},
		{"zh unit", "3单元 楼下快递", "a street address"},
		{"zh building", "万科城5栋", "a street address"},
		{"zh a flat's layout", "两室一厅 2室1厅 租金", ""},
		{"zh a date with 号", "3月5号 上海 天气", ""},
		{"zh a metro line", "地铁2号线 末班车", ""},
		{"zh a year and a price", "2024年 健身卡 1999元", ""},
		{"zh a road without a number", "南京路 步行街 美食", ""},
		{"en street", "gyms near 221B Baker Street", "a street address"},
		{"en avenue abbreviated", "1600 Pennsylvania Ave parking", "a street address"},
		{"en two-word name", "12 Old Kent Rd market", "a street address"},
		{"en street food", "top 10 street food in Bangkok", ""},
		{"en a year", "2024 marathon road closures", ""},
		{"en a price", "$1299 road bike vs gravel", ""},
		{"en a model number", "RTX 4090 drive bay fit", ""},
		{"en drive modes", "Model 3 drive modes explained", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := sensitiveKind(tc.query); got != tc.want {
				t.Errorf("sensitiveKind(%q) = %q, want %q", tc.query, got, tc.want)
			}
		})
	}
}

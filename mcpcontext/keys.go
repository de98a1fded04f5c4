package mcpcontext

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/MicahParks/jwkset"
)

// KeyFile is the name of the generated signing key inside the data dir.
const KeyFile = "mcp-context-key.pem"

// PublicKey is a verification key as the JWKS publishes it: the key, its algorithm (EdDSA
// or ES256) and its kid.
type PublicKey struct {
	Key crypto.PublicKey
	Alg string
	KID string
}

// Key is a signing key with its public half.
type Key struct {
	signer crypto.Signer
	public PublicKey
}

// Public returns the key's public half, as published.
func (k *Key) Public() PublicKey { return k.public }

// GenerateKey makes a fresh Ed25519 key.
func GenerateKey() (*Key, error) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("mcpcontext: generate key: %w", err)
	}
	return newKey(priv)
}

// newKey wraps an Ed25519 or P-256 private key; other keys are refused because the JWKS and
// the verifier accept only EdDSA and ES256.
func newKey(priv any) (*Key, error) {
	signer, ok := priv.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("mcpcontext: %T is not a signing key", priv)
	}
	pub, err := newPublicKey(signer.Public())
	if err != nil {
		return nil, err
	}
	return &Key{signer: signer, public: pub}, nil
}

// newPublicKey names the algorithm and computes the kid of an Ed25519 or P-256 public key.
func newPublicKey(pub crypto.PublicKey) (PublicKey, error) {
	var alg string
	switch k := pub.(type) {
	case ed25519.PublicKey:
		alg = string(jwkset.AlgEdDSA)
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return PublicKey{}, errors.New("mcpcontext: only P-256 ECDSA keys are supported (ES256)")
		}
		alg = string(jwkset.AlgES256)
	default:
		return PublicKey{}, fmt.Errorf("mcpcontext: unsupported key type %T (want Ed25519 or ECDSA P-256)", pub)
	}
	kid, err := thumbprint(pub)
	if err != nil {
		return PublicKey{}, err
	}
	return PublicKey{Key: pub, Alg: alg, KID: kid}, nil
}

// thumbprint is the RFC 7638 JWK thumbprint (SHA-256, base64url): the required members of
// the public JWK, in lexical order, without white space.
func thumbprint(pub crypto.PublicKey) (string, error) {
	jwk, err := jwkset.NewJWKFromKey(pub, jwkset.JWKOptions{})
	if err != nil {
		return "", fmt.Errorf("mcpcontext: key thumbprint: %w", err)
	}
	m := jwk.Marshal()
	var members any
	if m.KTY == jwkset.KtyOKP {
		members = struct {
			CRV string `json:"crv"`
			KTY string `json:"kty"`
			X   string `json:"x"`
		}{string(m.CRV), string(m.KTY), m.X}
	} else {
		members = struct {
			CRV string `json:"crv"`
			KTY string `json:"kty"`
			X   string `json:"x"`
			Y   string `json:"y"`
		}{string(m.CRV), string(m.KTY), m.X, m.Y}
	}
	b, err := json.Marshal(members)
	if err != nil {
		return "", fmt.Errorf("mcpcontext: key thumbprint: %w", err)
	}
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// ParseKeyPEM reads a private key: PKCS#8 ("PRIVATE KEY", as openssl genpkey writes) or
// SEC 1 ("EC PRIVATE KEY").
func ParseKeyPEM(b []byte) (*Key, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New("mcpcontext: no PEM block")
	}
	var priv any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		priv, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		priv, err = x509.ParseECPrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("mcpcontext: PEM block %q is not a private key", block.Type)
	}
	if err != nil {
		return nil, fmt.Errorf("mcpcontext: parse private key: %w", err)
	}
	return newKey(priv)
}

// ParsePublicKeyPEM reads a key to publish: a "PUBLIC KEY" (PKIX) block, or a private key
// whose public half is taken.
func ParsePublicKeyPEM(b []byte) (PublicKey, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return PublicKey{}, errors.New("mcpcontext: no PEM block")
	}
	if block.Type != "PUBLIC KEY" {
		k, err := ParseKeyPEM(b)
		if err != nil {
			return PublicKey{}, err
		}
		return k.Public(), nil
	}
	pub, err := x509.ParsePKIXPublicKey(block.Bytes)
	if err != nil {
		return PublicKey{}, fmt.Errorf("mcpcontext: parse public key: %w", err)
	}
	return newPublicKey(pub)
}

// MarshalKeyPEM encodes k as a PKCS#8 "PRIVATE KEY" PEM block.
func MarshalKeyPEM(k *Key) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(k.signer)
	if err != nil {
		return nil, fmt.Errorf("mcpcontext: encode key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// ReadKeyFile reads the signing key at path (see [ParseKeyPEM]).
func ReadKeyFile(path string) (*Key, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("mcpcontext: read key: %w", err)
	}
	k, err := ParseKeyPEM(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// ReadPublicKeyFile reads a key to publish at path (see [ParsePublicKeyPEM]).
func ReadPublicKeyFile(path string) (PublicKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return PublicKey{}, fmt.Errorf("mcpcontext: read key: %w", err)
	}
	k, err := ParsePublicKeyPEM(b)
	if err != nil {
		return PublicKey{}, fmt.Errorf("%s: %w", path, err)
	}
	return k, nil
}

// LoadOrCreateKey returns the key in <dataDir>/mcp-context-key.pem, generating an Ed25519
// key there (folder 0700, file 0600) when there is none, so a local server signs with the
// same key across restarts. As with the JWT secret, the new file is written under a
// temporary name and hard-linked into place, so two processes starting together end up
// with one key; a present but unreadable key is an error rather than being replaced.
func LoadOrCreateKey(dataDir string) (*Key, error) {
	path := filepath.Join(dataDir, KeyFile)
	k, err := ReadKeyFile(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return k, err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("mcpcontext: create data dir: %w", err)
	}
	if k, err = GenerateKey(); err != nil {
		return nil, err
	}
	b, err := MarshalKeyPEM(k)
	if err != nil {
		return nil, err
	}
	if err := publish(path, b); err != nil {
		return nil, err
	}
	return ReadKeyFile(path) // ours, or the one a concurrent process linked first
}

// publish writes content to a temporary 0600 file beside path and links it into place; when
// another writer's file is already there, that one stays.
func publish(path string, content []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+KeyFile+"-*")
	if err != nil {
		return fmt.Errorf("mcpcontext: store key: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	_, err = f.Write(content)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Link(tmp, path)
	}
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("mcpcontext: store key: %w", err)
	}
	return nil
}

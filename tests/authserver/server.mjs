// A real authorization server for the OAuth tests: panva's oidc-provider, pinned in package-lock.json.
//
// argv[2] (JSON): {port, resource, scopes: [...], jwks: {keys: [private JWKs]}, clients: [oidc-provider client metadata]}
// It issues JWT access tokens for `resource` (RFC 8707 resource indicators) signed with the given keys,
// by authorization code + PKCE (a person signs in on its development login page: any login name, which
// becomes `sub`) and by client credentials (`sub` is the client id). Prints "listening <issuer>" when up.
// `scopes` are notewarden's (tests/authserver/__init__.py SCOPES): one per right, `notewarden:<right>`,
// and the three from before rights, `notes:*`, so the compatibility path is tested with tokens it issues.
import Provider from "oidc-provider";

const config = JSON.parse(process.argv[2]);
const issuer = `http://127.0.0.1:${config.port}`;
const SCOPES = config.scopes.join(" ");

const provider = new Provider(issuer, {
  clients: config.clients,
  jwks: config.jwks,
  scopes: ["openid", ...SCOPES.split(" ")],
  findAccount: async (_ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
  features: {
    devInteractions: { enabled: true }, // its own login and consent pages: a person's sign-in, for tests
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      defaultResource: async () => config.resource,
      useGrantedResource: async () => true,
      getResourceServerInfo: async (_ctx, resource) => {
        if (resource !== config.resource) throw new Error(`unknown resource ${resource}`);
        return { scope: SCOPES, audience: resource, accessTokenFormat: "jwt", accessTokenTTL: 300, jwt: { sign: { alg: "RS256" } } };
      },
    },
  },
});
provider.proxy = false;
provider.listen(config.port, "127.0.0.1", () => console.log(`listening ${issuer}`));

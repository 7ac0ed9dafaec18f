// Who is calling: AUTH_MODE none (everyone is `local`), token (hashed API keys) or jwt (`sub` is the
// user id). In token and jwt modes every request needs a valid credential except the public ones (/health, the API
// documents): a shared deployment has no anonymous user, whose data anyone could read (decisions.md).
import { createSecretKey, type KeyObject } from 'node:crypto';
import { importSPKI, jwtVerify } from 'jose';
import type { Config } from './env.ts';
import type { ApiKeysRepository } from './db/api-keys-repository.ts';
import { Unauthorized } from './errors.ts';

export const DEFAULT_USER = 'local';

/** The caller's user id; `isPublic` requests (health, documents) need no credential and are `local`. */
export type Authenticate = (authorization: string | undefined, isPublic: boolean) => Promise<string>;

export async function createAuthenticator(config: Config, apiKeys: ApiKeysRepository): Promise<Authenticate> {
  if (config.AUTH_MODE === 'none') return async () => DEFAULT_USER;

  const verify = config.AUTH_MODE === 'token' ? tokenVerifier(apiKeys) : await jwtVerifier(config);
  const hint = config.AUTH_MODE === 'token' ? 'an API key (`pnpm keys create`)' : 'a JWT whose `sub` is your user id';
  return async (authorization, isPublic) => {
    if (!authorization) {
      if (isPublic) return DEFAULT_USER;
      throw new Unauthorized(`this endpoint needs an \`Authorization: Bearer <token>\` header with ${hint}`);
    }
    const token = bearerToken(authorization);
    if (token === undefined) throw new Unauthorized('the Authorization header must have the form `Bearer <token>`');
    return verify(token);
  };
}

/** The token of an `Authorization: Bearer <token>` header; undefined for anything else. */
export function bearerToken(authorization: string | undefined): string | undefined {
  return /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '')?.[1];
}

function tokenVerifier(apiKeys: ApiKeysRepository): (token: string) => Promise<string> {
  return async (token) => {
    const userId = await apiKeys.userForKey(token);
    if (!userId) throw new Unauthorized('the API key is unknown or revoked; create one with `pnpm keys create`');
    return userId;
  };
}

async function jwtVerifier(config: Config): Promise<(token: string) => Promise<string>> {
  let key: KeyObject | Awaited<ReturnType<typeof importSPKI>>;
  let algorithms: string[];
  if (config.JWT_PUBLIC_KEY) {
    key = await importSPKI(config.JWT_PUBLIC_KEY.replace(/\\n/g, '\n'), 'RS256');
    algorithms = ['RS256'];
  } else {
    key = createSecretKey(Buffer.from(config.JWT_SECRET!, 'utf8'));
    algorithms = ['HS256'];
  }
  return async (token) => {
    try {
      const { payload } = await jwtVerify(token, key, {
        algorithms,
        issuer: config.JWT_ISSUER,
        audience: config.JWT_AUDIENCE,
      });
      if (typeof payload.sub !== 'string' || payload.sub === '') {
        throw new Unauthorized('the token has no `sub` claim naming the user');
      }
      return payload.sub;
    } catch (err) {
      if (err instanceof Unauthorized) throw err;
      throw new Unauthorized(`the token was rejected: ${(err as Error).message}`);
    }
  };
}

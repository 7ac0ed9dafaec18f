// Every dataset belongs to its user: another user's ids read exactly like unknown ones (404, never 403).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { csv, startService, type TestService } from '../../../test/support/preprocessing.ts';

let svc: TestService;
let alice: Record<string, string>;
let bob: Record<string, string>;
beforeAll(async () => {
  svc = await startService({ AUTH_MODE: 'token' });
  alice = { authorization: `Bearer ${(await svc.platform.apiKeys.create('alice', 'a')).key}` };
  bob = { authorization: `Bearer ${(await svc.platform.apiKeys.create('bob', 'b')).key}` };
});
afterAll(() => svc.close());

describe('ownership', () => {
  it("bob gets 404 for alice's upload and processed dataset on every endpoint", async () => {
    const upload = await svc.upload('a.csv', csv([['q', 'a'], ['1', '2'], ['3', '4']]), { headers: alice });
    expect(upload.statusCode).toBe(200);
    const body = {
      dataset_name: 'x', dataset_id: upload.json().dataset_id,
      config: { field_mappings: { user_field: { type: 'column', value: 'q' }, assistant_field: { type: 'column', value: 'a' } } },
    };
    expect((await svc.process(body, bob)).statusCode).toBe(404);
    const processed = await svc.process(body, alice);
    expect(processed.statusCode).toBe(200);
    const id = processed.json().processed_dataset_id;
    expect((await svc.call({ url: `/datasets/${id}`, headers: bob })).statusCode).toBe(404);
    expect((await svc.call({ method: 'DELETE', url: `/datasets/${id}`, headers: bob })).statusCode).toBe(404);
    expect((await svc.call({ url: '/datasets', headers: bob })).json().datasets).toEqual([]);
    expect((await svc.call({ url: '/datasets', headers: alice })).json().datasets).toHaveLength(1);
    expect((await svc.call({ url: `/datasets/${id}`, headers: alice })).statusCode).toBe(200);
    // Token mode has no anonymous user: no header is a 401, never the data of the user the first key belongs to.
    expect((await svc.call({ url: `/datasets/${id}` })).statusCode).toBe(401);
    expect((await svc.call({ url: '/datasets', headers: { authorization: 'Bearer ftp_forged' } })).statusCode).toBe(401);
  });

  it('GET /datasets/uploads lists the caller\'s own uploads, newest first, processed or not', async () => {
    const first = (await svc.upload('first.csv', csv([['q', 'a'], ['1', '2']]), { headers: alice })).json();
    const second = (await svc.upload('second.csv', csv([['x'], ['y'], ['z']]), { headers: alice })).json();
    const list = (await svc.call({ url: '/datasets/uploads', headers: alice })).json().uploads as Array<Record<string, unknown>>;
    expect(list.slice(0, 2)).toEqual([
      { ...second, created_at: expect.any(String) },
      { ...first, created_at: expect.any(String) },
    ]);
    expect((await svc.call({ url: '/datasets/uploads', headers: bob })).json()).toEqual({ uploads: [] });
  });
});

/**
 * One HTTP exchange with a bound on the whole of it: the deadline covers the body as well as the
 * headers (@libpdf/core's own fetches clear their timer once the headers arrive, and read any body
 * size), and a body past `maxBytes` is cut off and refused. For TSA, OCSP, CRL and certificate fetches
 * at sealing: peers we do not control, reached from the sealing worker.
 */
export type BoundedFetchOptions = { timeoutMs: number; maxBytes: number };

export class FetchRefused extends Error {}

/** The runtime's own fetch, whatever later replaces globalThis.fetch (the sealing worker bounds the library's). */
const nativeFetch = globalThis.fetch;

export async function fetchBounded(url: string, init: RequestInit, o: BoundedFetchOptions, fetchFn: typeof fetch = nativeFetch): Promise<{ status: number; body: Uint8Array }> {
  if (!/^https?:\/\//i.test(url)) throw new FetchRefused(`not an http(s) URL: ${redact(url)}`);
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), o.timeoutMs);
  try {
    const res = await fetchFn(url, { ...init, redirect: 'error', signal: controller.signal });
    const declared = Number(res.headers.get('content-length') ?? NaN);
    if (declared > o.maxBytes) throw new FetchRefused(`${redact(url)} answered ${declared} bytes, more than the ${o.maxBytes} allowed`);
    const chunks: Uint8Array[] = [];
    let size = 0;
    if (res.body) {
      for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
        size += chunk.byteLength;
        if (size > o.maxBytes) {
          controller.abort();
          throw new FetchRefused(`${redact(url)} answered more than the ${o.maxBytes} bytes allowed`);
        }
        chunks.push(chunk);
      }
    }
    return { status: res.status, body: Buffer.concat(chunks) };
  } catch (err) {
    if (controller.signal.aborted && !(err instanceof FetchRefused)) throw new FetchRefused(`${redact(url)} did not answer within ${o.timeoutMs} ms`);
    if (err instanceof FetchRefused) throw err;
    throw new FetchRefused(`${redact(url)}: ${(err as Error)?.message ?? String(err)}`);
  } finally {
    clearTimeout(timer);
  }
}

/** A fetch for @libpdf/core's own calls (AIA certificate fetches): the same bounds, a Response back. */
export function boundedFetchFn(o: BoundedFetchOptions, fetchFn: typeof fetch = nativeFetch): typeof fetch {
  return (async (input: string | URL | Request, init?: RequestInit) => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const { status, body } = await fetchBounded(url, init ?? {}, o, fetchFn);
    return new Response(status === 204 || status === 304 ? null : Buffer.from(body), { status });
  }) as typeof fetch;
}

/** A URL as it may appear in a log or an error: no user information. */
export function redact(url: string): string {
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    return u.href;
  } catch {
    return '(an invalid URL)';
  }
}

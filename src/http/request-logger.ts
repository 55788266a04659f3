import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions, Level, LevelWithSilentOrString, Logger } from 'pino';

/**
 * `request.log` made on demand. Fastify gives each request a child of the root logger bound to its id;
 * a pino child built with options (Fastify always passes some, even empty) copies the serializers and
 * rebuilds the formatters, which cost a cheap read more than the line it writes. Most requests log
 * nothing but their access line, which the LogController writes through the root logger with the id
 * in it (request-log.ts): so the child is made the first time the request logs something else, at a
 * level the root logger writes, and not at all otherwise. Lines read exactly as the child's would.
 */
class RequestLogger {
  #child: Logger | undefined;
  readonly root: Logger;
  readonly #binding: Bindings;
  readonly #options: ChildLoggerOptions | undefined;

  constructor(root: Logger, binding: Bindings, options: ChildLoggerOptions | undefined) {
    this.root = root;
    this.#binding = binding;
    this.#options = options;
  }

  #real(): Logger {
    return (this.#child ??= this.root.child(this.#binding, this.#options));
  }

  get level(): LevelWithSilentOrString {
    return this.#child?.level ?? this.root.level;
  }
  set level(level: LevelWithSilentOrString) {
    this.#real().level = level;
  }
  isLevelEnabled(level: LevelWithSilentOrString): boolean {
    return (this.#child ?? this.root).isLevelEnabled(level);
  }
  bindings(): Bindings {
    return this.#child?.bindings() ?? { ...this.root.bindings(), ...this.#binding };
  }
  child(bindings: Bindings, options?: ChildLoggerOptions): Logger {
    return this.#real().child(bindings, options);
  }
  #log(level: Level, args: unknown[]): void {
    if (this.#child === undefined && !this.root.isLevelEnabled(level)) return;
    (this.#real()[level] as (...a: unknown[]) => void)(...args);
  }
  fatal(...args: unknown[]): void {
    this.#log('fatal', args);
  }
  error(...args: unknown[]): void {
    this.#log('error', args);
  }
  warn(...args: unknown[]): void {
    this.#log('warn', args);
  }
  info(...args: unknown[]): void {
    this.#log('info', args);
  }
  debug(...args: unknown[]): void {
    this.#log('debug', args);
  }
  trace(...args: unknown[]): void {
    this.#log('trace', args);
  }
  silent(): void {}
}

/**
 * Fastify's `childLoggerFactory`. A route's own log level or serializers (none today) need the real
 * child from the start; pino's child with no options takes its fast path.
 */
export function requestLoggerFactory(logger: FastifyBaseLogger, bindings: Bindings, options: ChildLoggerOptions): FastifyBaseLogger {
  const own = options.level !== undefined || options.serializers !== undefined ? options : undefined;
  return new RequestLogger(logger as Logger, bindings, own) as unknown as FastifyBaseLogger;
}

/** The logger a request's lines go through without a child: the root one (see RequestLogger). */
export function rootLoggerOf(log: FastifyBaseLogger): FastifyBaseLogger {
  return log instanceof RequestLogger ? (log.root as FastifyBaseLogger) : log;
}

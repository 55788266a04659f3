/** A refused configuration: its message is one line naming the variable, printed without a stack. */
export class ConfigError extends Error {}

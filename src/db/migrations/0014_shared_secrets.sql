CREATE TABLE "secret_fingerprints" (
	"name" text PRIMARY KEY NOT NULL,
	"salt" text NOT NULL,
	"fingerprint" text NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);

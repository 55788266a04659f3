ALTER TABLE "customers" ADD COLUMN "default_locale" text;--> statement-breakpoint
ALTER TABLE "engine_recipients" ADD COLUMN "locale" text;--> statement-breakpoint
ALTER TABLE "envelope_recipients" ADD COLUMN "locale" text;
ALTER TABLE "engine_fields" ADD COLUMN "rules" jsonb;--> statement-breakpoint
ALTER TABLE "envelope_fields" ADD COLUMN "options" jsonb;--> statement-breakpoint
ALTER TABLE "envelope_fields" ADD COLUMN "rules" jsonb;